import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantRole } from '../../src/identity/access/user-access.js';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { loadFunnel, replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { findUserById } from '../../src/identity/users/user.js';
import { callbackUri, createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import {
  IdentityClient,
  MovableClock,
  randomIp,
  refreshCookieOf,
  type Login,
} from './support/identity-client.js';
import { totpCode } from './support/totp-codes.js';

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();
const sixMinutes = 6 * 60 * 1000;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

/** A user signed in through the API; `call` sends the login's access token from one IP. */
async function signedIn(fields: Parameters<typeof createTestUser>[1] = {}) {
  const user = await createTestUser(service.service.db, fields);
  const ip = randomIp();
  const login = await client.login(user.email!, user.password, { ip });
  const call = (method: string, path: string, body?: unknown, token = login.accessToken) =>
    client.request(method, path, body, { token, ip });
  return { user, ip, login, call };
}

async function setUpTotp(call: Awaited<ReturnType<typeof signedIn>>['call']): Promise<string> {
  const setup = await call('POST', '/security/auth-methods/totp/setup');
  expect(setup.status).toBe(200);
  const secret = setup.body.secret as string;
  const verified = await call('POST', '/security/auth-methods/totp/verify', {
    code: await totpCode(secret, clock.now()),
  });
  expect(verified.status).toBe(200);
  return secret;
}

async function refreshedToken(login: Login): Promise<string> {
  const refreshed = await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
  expect(refreshed.status).toBe(200);
  expect(refreshCookieOf(refreshed)).toBeDefined();
  return refreshed.body.accessToken as string;
}

describe('re-authentication before changing a contact', () => {
  it('refuses a fresh access token alone 5 minutes after the sign-in, and says how to re-authenticate', async () => {
    const { user, login, call } = await signedIn();
    clock.advance(sixMinutes);
    // A brand-new access token (a refresh) proves nothing about who holds it.
    const fresh = await refreshedToken(login);
    const next = uniqueEmail('next');
    const refused = await call('POST', '/auth/verify/send', { identifier: next }, fresh);
    expect(refused).toMatchObject({
      status: 401,
      body: {
        error: 'reauthentication_required',
        details: {
          maxAgeSeconds: 300,
          reauthenticate: 'POST /api/v2/identity/auth/reauthenticate',
          methods: ['password', 'email_otp'],
        },
      },
    });
    expect(refused.headers.get('www-authenticate')).toContain('error="insufficient_user_authentication"');
    expect(refused.headers.get('www-authenticate')).toContain('max_age=300');
    expect(service.service.developmentMessages.latestTo(next)).toBeUndefined();

    const confirmed = await call(
      'POST',
      '/auth/reauthenticate',
      { method: 'password', password: user.password },
      fresh,
    );
    expect(confirmed).toMatchObject({ status: 200, body: { status: 'reauthenticated', method: 'password' } });
    const validFor = Date.parse(confirmed.body.validUntil as string) - clock.now().getTime();
    expect(validFor).toBeGreaterThan(295_000);
    expect(validFor).toBeLessThanOrEqual(300_000);

    expect((await call('POST', '/auth/verify/send', { identifier: next }, fresh)).status).toBe(200);
    const code = service.service.developmentMessages.latestTo(next)!.code;
    expect((await call('POST', '/auth/verify/confirm', { identifier: next, code }, fresh)).status).toBe(200);
    expect(await findUserById(service.service.db, user.id)).toMatchObject({ email: next });
    const [event] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: 'identity.session.reauthenticated',
    });
    expect(event).toMatchObject({ details: { method: 'password', sessionId: login.sessionId } });
  });

  it('does not count a QR sign-in approved by an older session as a fresh authentication', async () => {
    const { db } = service.service;
    const { call } = await signedIn();
    clock.advance(sixMinutes);
    // Whoever holds the signed-in device's access token (no password) shows a QR code elsewhere and
    // approves it: the session that starts is no more recently authenticated than the approver's.
    const funnel = await loadFunnel(db, 'login');
    await replaceFunnel(db, 'login', [{ stepId: 'qr', mandatory: true, order: 1 }], clock.now());
    try {
      const started = await client.start('login');
      const token = (started.screen[0]!.data!.qr as { token: string }).token;
      expect((await call('POST', '/auth/qr/approve', { token })).status).toBe(200);
      const completed = await client.step(started.sessionId, 'qr', {});
      expect(completed.body).toMatchObject({ status: 'completed' });
      const newSession = completed.body.accessToken;
      const refused = await call('POST', '/auth/verify/send', { identifier: uniquePhone() }, newSession);
      expect(refused).toMatchObject({ status: 401, body: { error: 'reauthentication_required' } });
    } finally {
      await replaceFunnel(db, 'login', funnel, clock.now());
    }
  });

  it('lets the sign-in itself count for 5 minutes', async () => {
    const { call } = await signedIn();
    clock.advance(4 * 60 * 1000);
    expect((await call('POST', '/auth/verify/send', { identifier: uniquePhone() })).status).toBe(200);
  });

  it('needs it again when the window is over', async () => {
    const { user, call } = await signedIn();
    clock.advance(sixMinutes);
    await call('POST', '/auth/reauthenticate', { method: 'password', password: user.password });
    clock.advance(sixMinutes);
    const refused = await call('POST', '/auth/verify/send', { identifier: uniquePhone() });
    expect(refused.body.error).toBe('reauthentication_required');
  });

  it('counts wrong passwords like failed logins: the lockout stops the guessing', async () => {
    const { user, call } = await signedIn();
    for (let attempt = 0; attempt < 5; attempt++) {
      const wrong = await call('POST', '/auth/reauthenticate', {
        method: 'password',
        password: 'not it at all',
      });
      expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_password' } });
    }
    // The 6th attempt waits, even with the right password (decided before it is looked at).
    const locked = await call('POST', '/auth/reauthenticate', {
      method: 'password',
      password: user.password,
    });
    expect(locked).toMatchObject({ status: 429, body: { error: 'too_many_attempts' } });
    const failures = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: 'identity.login.failed',
    });
    expect(failures).toHaveLength(5);
    expect(failures[0]!.details).toMatchObject({ method: 'password', reason: 'reauthentication' });
  });

  it('gives 30 parallel wrong passwords no more tries than the lockout ladder allows', async () => {
    const { user, login } = await signedIn();
    // From distinct addresses: the account's ladder is what is tested, not the IP throttle.
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () =>
        client.post(
          '/auth/reauthenticate',
          { method: 'password', password: 'not it at all' },
          { token: login.accessToken, ip: randomIp() },
        ),
      ),
    );
    const statuses = outcomes.map((outcome) => outcome.status);
    expect(statuses.filter((status) => status === 400)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(25);
    const failures = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: 'identity.login.failed',
    });
    expect(failures).toHaveLength(5);
  });

  it('accepts a code sent to the verified email', async () => {
    const { user, call } = await signedIn();
    clock.advance(sixMinutes);
    const sent = await call('POST', '/auth/reauthenticate', { method: 'email_otp' });
    expect(sent).toMatchObject({ status: 200, body: { status: 'code_sent', expiresInSeconds: 600 } });
    const code = service.service.developmentMessages.latestTo(user.email!)!.code!;
    const wrong = await call('POST', '/auth/reauthenticate', {
      method: 'email_otp',
      code: code === '000000' ? '111111' : '000000',
    });
    expect(wrong).toMatchObject({
      status: 400,
      body: { error: 'invalid_code', details: { attemptsLeft: 4 } },
    });
    const right = await call('POST', '/auth/reauthenticate', { method: 'email_otp', code });
    expect(right).toMatchObject({ status: 200, body: { status: 'reauthenticated', method: 'email_otp' } });
    expect((await call('POST', '/auth/verify/send', { identifier: uniquePhone() })).status).toBe(200);
  });

  it('refuses a method the user does not have, listing the ones they do', async () => {
    const { call } = await signedIn({ email: uniqueEmail(), phone: uniquePhone(), phoneVerified: false });
    const answer = await call('POST', '/auth/reauthenticate', { method: 'totp', code: '123456' });
    expect(answer).toMatchObject({
      status: 409,
      body: { error: 'method_not_available', details: { methods: ['password', 'email_otp'] } },
    });
    const malformed = await call('POST', '/auth/reauthenticate', { method: 'magic' });
    expect(malformed).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
  });

  it('takes the current password of a password change as a re-authentication', async () => {
    const { user, call } = await signedIn();
    clock.advance(sixMinutes);
    const changed = await call('POST', '/auth/password/change', {
      currentPassword: user.password,
      newPassword: 'a brand new passphrase',
      newPasswordConfirmation: 'a brand new passphrase',
    });
    expect(changed.status).toBe(200);
    expect((await call('POST', '/auth/verify/send', { identifier: uniquePhone() })).status).toBe(200);
  });
});

describe('re-authentication before changing a sign-in method', () => {
  it('refuses to remove TOTP with only a bearer token; a TOTP code re-authenticates', async () => {
    const { user, call } = await signedIn();
    const secret = await setUpTotp(call);
    clock.advance(sixMinutes);
    const refused = await call('DELETE', '/security/auth-methods/totp');
    expect(refused).toMatchObject({
      status: 401,
      body: { error: 'reauthentication_required', details: { methods: ['password', 'totp', 'email_otp'] } },
    });
    expect(
      await service.service.db('user_auth_methods').where({ user_id: user.id, type: 'totp' }),
    ).toHaveLength(1);

    const reauthenticated = await call('POST', '/auth/reauthenticate', {
      method: 'totp',
      code: await totpCode(secret, clock.now()),
    });
    expect(reauthenticated).toMatchObject({ status: 200, body: { method: 'totp' } });
    expect((await call('DELETE', '/security/auth-methods/totp')).status).toBe(200);
  });

  it('refuses to set a method up, or turn one off, without a recent authentication', async () => {
    const { call } = await signedIn();
    clock.advance(sixMinutes);
    for (const [method, path] of [
      ['POST', '/security/auth-methods/totp/setup'],
      ['POST', '/security/auth-methods/totp/verify'],
      ['DELETE', '/security/auth-methods/email_otp'],
    ] as const) {
      const answer = await call(method, path, method === 'POST' ? { code: '123456' } : undefined);
      expect(answer.body.error, `${method} ${path}`).toBe('reauthentication_required');
    }
    // Reading the list needs no re-authentication.
    expect((await call('GET', '/security/auth-methods')).status).toBe(200);
  });
});

describe('client registration shares the mechanism', () => {
  const registration = {
    name: 'Admin app',
    type: 'public',
    redirect_uris: [callbackUri],
    scopes: ['openid'],
  };
  async function register(token: string) {
    const response = await fetch(service.url('/oauth/clients/register'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(registration),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('reads the session’s last authentication for a main-auth token', async () => {
    const admin = await createTestUser(service.service.db);
    await grantRole(service.service.db, admin.id, 'super_admin');
    const ip = randomIp();
    const login = await client.login(admin.email!, admin.password, { ip });
    clock.advance(sixMinutes);
    const stale = await register(login.accessToken);
    expect(stale).toMatchObject({
      status: 401,
      body: { error: 'reauthentication_required', details: { methods: ['password', 'email_otp'] } },
    });
    await client.post(
      '/auth/reauthenticate',
      { method: 'password', password: admin.password },
      { token: login.accessToken, ip },
    );
    expect((await register(login.accessToken)).status).toBe(201);

    await client.post('/auth/logout', undefined, { cookie: login.refreshCookie });
    expect(await register(login.accessToken)).toMatchObject({
      status: 401,
      body: { error: 'session_ended' },
    });
  });
});
