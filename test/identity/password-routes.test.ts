import { requestFrom } from '../../src/http/request-info.js';
import { Messages } from '../../src/i18n/messages.js';
import { SecurityNotifications } from '../../src/identity/notifications/security-notifications.js';
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { changePassword } from '../../src/identity/passwords/password-change.js';
import type { PasswordDeps } from '../../src/identity/passwords/password-deps.js';
import { resetPassword } from '../../src/identity/passwords/password-reset.js';
import { createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { callIdentityApi, mainAuthTokenFor, uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
});
afterAll(() => service?.close());
afterEach(() => {
  vi.useRealTimers();
});

const api = (path: string, body?: unknown, options?: Parameters<typeof callIdentityApi>[3]) =>
  callIdentityApi(service, path, body, options);

/** Signs in through the auth-flow engine; the answer's HTTP-like status. */
async function loginStatus(identifier: string, password: string, ip = uniqueIp()): Promise<number> {
  const request = requestFrom(ip, 'test');
  try {
    const { flows } = service.service;
    const started = await flows.start('login', request);
    const identified = await flows.submit(started.session.id, 'phone-email', { identifier }, request);
    if (identified.status !== 'in_progress') throw new Error('expected the password step');
    await flows.submit(identified.session.id, 'password', { password }, request);
    return 200;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

const newPassword = 'a brand new passphrase';

/** forgot → the code from the development outbox. */
async function requestCode(identifier: string, ip = uniqueIp()): Promise<string> {
  const answer = await api('/auth/password/forgot', { identifier }, { ip });
  expect(answer.status).toBe(200);
  return service.service.developmentMessages.latestTo(identifier)!.code!;
}

describe('POST /auth/password/forgot', () => {
  it('sends a code and a link to /:lang/reset-password carrying it', async () => {
    const user = await createTestUser(service.service.db);
    const answer = await api(
      '/auth/password/forgot',
      { identifier: user.email, lang: 'fr' },
      { ip: uniqueIp() },
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'code_sent', expiresInSeconds: 600, resendAfterSeconds: 60 });
    const message = service.service.developmentMessages.latestTo(user.email!)!;
    expect(message).toMatchObject({
      channel: 'email',
      purpose: 'reset_password',
      subject: 'Reset your password',
    });
    expect(message.code).toMatch(/^\d{6}$/);
    const link = new URL(message.link!);
    expect(`${link.origin}${link.pathname}`).toBe(service.url('/fr/reset-password'));
    expect(link.searchParams.get('identifier')).toBe(user.email);
    expect(link.searchParams.get('code')).toBe(message.code);
  });

  it('sends by SMS to a phone', async () => {
    const phone = uniquePhone();
    await createTestUser(service.service.db, { phone, phoneVerified: true, email: uniqueEmail() });
    await api('/auth/password/forgot', { identifier: phone.replace('+1', '+1 ') }, { ip: uniqueIp() });
    expect(service.service.developmentMessages.latestTo(phone)?.channel).toBe('sms');
  });

  it('answers the same for an identifier no account has, and sends nothing', async () => {
    const nobody = uniqueEmail('nobody');
    const answer = await api('/auth/password/forgot', { identifier: nobody }, { ip: uniqueIp() });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'code_sent', expiresInSeconds: 600, resendAfterSeconds: 60 });
    expect(service.service.developmentMessages.latestTo(nobody)).toBeUndefined();
    // ... and the next steps answer like for a real account.
    const check = await api(
      '/auth/password/verify-code',
      { identifier: nobody, code: '123456' },
      { ip: uniqueIp() },
    );
    expect(check.status).toBe(400);
    expect(check.body).toMatchObject({ error: 'invalid_code', details: { attemptsLeft: 4 } });
  });

  it('does not send a reset to an unconfirmed email', async () => {
    const user = await createTestUser(service.service.db, { emailVerified: false });
    expect((await api('/auth/password/forgot', { identifier: user.email }, { ip: uniqueIp() })).status).toBe(
      200,
    );
    expect(service.service.developmentMessages.latestTo(user.email!)).toBeUndefined();
  });

  it('refuses bad input with the JSON error body', async () => {
    const ip = uniqueIp();
    expect((await api('/auth/password/forgot', { identifier: 'not an address' }, { ip })).body).toMatchObject(
      {
        error: 'invalid_identifier',
      },
    );
    expect((await api('/auth/password/forgot', '{"identifier":', { ip })).body).toMatchObject({
      error: 'invalid_json',
    });
    const missing = await api('/auth/password/forgot', {}, { ip });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'invalid_request', details: [{ path: 'identifier' }] });
    expect(
      (await api('/auth/password/forgot', { identifier: uniqueEmail(), lang: '../x' }, { ip })).status,
    ).toBe(400);
  });

  it('is limited to 5 per hour per IP and identifier (and by the code-sending limits)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const ip = uniqueIp();
    const identifier = uniqueEmail('limited');
    const forgot = () => api('/auth/password/forgot', { identifier }, { ip });
    const later = (seconds: number) => vi.setSystemTime(Date.now() + seconds * 1000);

    expect((await forgot()).status).toBe(200);
    const tooSoon = await forgot();
    expect(tooSoon.status).toBe(429); // 60 s between resends
    expect(Number(tooSoon.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    later(61);
    expect((await forgot()).status).toBe(200);
    later(61);
    expect((await forgot()).status).toBe(200);
    later(61);
    expect((await forgot()).status).toBe(429); // 3 codes per identifier per 10 minutes
    later(600);
    // 5 requests of this IP for this identifier were counted in the hour: the 6th is refused.
    const refused = await forgot();
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(3600 - 600 - 3 * 61 - 5);
    expect(refused.body).toMatchObject({
      error: 'too_many_requests',
      details: { retryAfterSeconds: retryAfter },
    });
    expect((refused.body as { message: string }).message).toMatch(/Try again in \d+ seconds/);
    // Another IP has its own hourly budget.
    expect((await api('/auth/password/forgot', { identifier }, { ip: uniqueIp() })).status).toBe(200);
  });
});

describe('POST /auth/password/verify-code', () => {
  it('says whether the code is right, counting wrong ones, without using the code up', async () => {
    const user = await createTestUser(service.service.db);
    const code = await requestCode(user.email!);
    const wrong = code === '000000' ? '111111' : '000000';
    const ip = uniqueIp();
    const bad = await api('/auth/password/verify-code', { identifier: user.email, code: wrong }, { ip });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: 'invalid_code',
      message: 'This code is not right. 4 attempts left.',
      details: { attemptsLeft: 4 },
      request_id: bad.headers.get('x-request-id'),
    });
    const good = await api('/auth/password/verify-code', { identifier: user.email, code }, { ip });
    expect(good).toMatchObject({ status: 200, body: { valid: true } });
    expect((await api('/auth/password/verify-code', { identifier: user.email, code }, { ip })).status).toBe(
      200,
    );
  });

  it('is limited to 10 per minute per IP', async () => {
    const ip = uniqueIp();
    const statuses = [];
    for (let index = 0; index < 11; index++) {
      statuses.push(
        (await api('/auth/password/verify-code', { identifier: uniqueEmail(), code: '123456' }, { ip }))
          .status,
      );
    }
    expect(statuses.slice(0, 10).every((status) => status === 410)).toBe(true);
    expect(statuses[10]).toBe(429);
  });
});

describe('POST /auth/password/reset', () => {
  it('sets the new password with the code; the old one stops working; the code is used up', async () => {
    const user = await createTestUser(service.service.db);
    const code = await requestCode(user.email!);
    const ip = uniqueIp();
    const answer = await api(
      '/auth/password/reset',
      { identifier: user.email, code, password: newPassword, passwordConfirmation: newPassword },
      { ip },
    );
    expect(answer).toMatchObject({ status: 200, body: { status: 'password_reset', revokedSessions: 0 } });
    expect(await loginStatus(user.email!, newPassword)).toBe(200);
    expect(await loginStatus(user.email!, user.password)).toBe(401);

    const replay = await api(
      '/auth/password/reset',
      {
        identifier: user.email,
        code,
        password: 'yet another passphrase',
        passwordConfirmation: 'yet another passphrase',
      },
      { ip },
    );
    expect(replay.status).toBe(410);
    expect(replay.body).toMatchObject({ error: 'code_expired' });

    const [event] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.passwordReset,
    });
    expect(event).toMatchObject({ ip, details: { revokedSessions: 0 } });
  });

  it('refuses a confirmation that differs and a weak password, keeping the code usable', async () => {
    const user = await createTestUser(service.service.db);
    const code = await requestCode(user.email!);
    const reset = (password: string, passwordConfirmation = password) =>
      api(
        '/auth/password/reset',
        { identifier: user.email, code, password, passwordConfirmation },
        { ip: uniqueIp() },
      );

    expect((await reset(newPassword, `${newPassword}!`)).body).toMatchObject({ error: 'password_mismatch' });
    expect((await reset('password1')).body).toMatchObject({
      error: 'weak_password',
      details: { reason: 'common' },
    });
    expect((await reset('short')).body).toMatchObject({
      error: 'weak_password',
      details: { reason: 'too_short' },
    });
    expect((await reset(user.email!)).body).toMatchObject({
      error: 'weak_password',
      details: { reason: 'contains_identifier' },
    });
    expect((await reset(newPassword)).status).toBe(200);
  });

  it('refuses a wrong code with the attempts left', async () => {
    const user = await createTestUser(service.service.db);
    const code = await requestCode(user.email!);
    const wrong = code === '000000' ? '111111' : '000000';
    const answer = await api(
      '/auth/password/reset',
      { identifier: user.email, code: wrong, password: newPassword, passwordConfirmation: newPassword },
      { ip: uniqueIp() },
    );
    expect(answer).toMatchObject({
      status: 400,
      body: { error: 'invalid_code', details: { attemptsLeft: 4 } },
    });
  });

  it('lifts a lockout: the owner proved control of the contact', async () => {
    const user = await createTestUser(service.service.db);
    const ip = uniqueIp();
    for (let index = 0; index < 5; index++) await loginStatus(user.email!, 'wrong password', ip);
    expect(await loginStatus(user.email!, user.password, ip)).toBe(429);
    const code = await requestCode(user.email!);
    await api(
      '/auth/password/reset',
      { identifier: user.email, code, password: newPassword, passwordConfirmation: newPassword },
      { ip: uniqueIp() },
    );
    expect(await loginStatus(user.email!, newPassword, ip)).toBe(200);
  });

  it('is limited to 5 per hour per IP', async () => {
    const ip = uniqueIp();
    const statuses = [];
    for (let index = 0; index < 6; index++) {
      const body = {
        identifier: uniqueEmail(),
        code: '123456',
        password: newPassword,
        passwordConfirmation: 'x',
      };
      statuses.push((await api('/auth/password/reset', body, { ip })).status);
    }
    expect(statuses).toEqual([400, 400, 400, 400, 400, 429]);
  });
});

describe('POST /auth/password/change', () => {
  it('needs a main-auth access token', async () => {
    const answer = await api('/auth/password/change', {
      currentPassword: 'x',
      newPassword,
      newPasswordConfirmation: newPassword,
    });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('changes the password when the current one is right', async () => {
    const user = await createTestUser(service.service.db);
    const token = await mainAuthTokenFor(service, user.id);
    const ip = uniqueIp();
    const answer = await api(
      '/auth/password/change',
      { currentPassword: user.password, newPassword, newPasswordConfirmation: newPassword },
      { token, ip },
    );
    expect(answer).toMatchObject({ status: 200, body: { status: 'password_changed', revokedSessions: 0 } });
    expect(await loginStatus(user.email!, newPassword)).toBe(200);
    expect(await loginStatus(user.email!, user.password)).toBe(401);
    const [event] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.passwordChanged,
    });
    expect(event).toMatchObject({ ip });
  });

  it('refuses a wrong current password, and counts it like a failed login', async () => {
    const user = await createTestUser(service.service.db);
    const token = await mainAuthTokenFor(service, user.id);
    const change = (currentPassword: string) =>
      api(
        '/auth/password/change',
        { currentPassword, newPassword, newPasswordConfirmation: newPassword },
        { token, ip: uniqueIp() },
      );
    const wrong = await change('not my password');
    expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_password' } });
    for (let index = 0; index < 4; index++) await change('not my password');
    // The session is the source: its failures lock it from every address, and nothing else.
    const locked = await change(user.password);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('30');
    expect(await loginStatus(user.email!, user.password)).toBe(200);
    const failures = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.loginFailed,
    });
    expect(failures).toHaveLength(5);
    expect(failures[0]!.details).toMatchObject({ method: 'password_change' });
  });

  it('refuses a mismatched confirmation, a weak password, and an account without a password', async () => {
    const user = await createTestUser(service.service.db);
    const token = await mainAuthTokenFor(service, user.id);
    const change = (next: string, confirmation = next) =>
      api(
        '/auth/password/change',
        { currentPassword: user.password, newPassword: next, newPasswordConfirmation: confirmation },
        { token, ip: uniqueIp() },
      );
    expect((await change(newPassword, 'other')).body).toMatchObject({ error: 'password_mismatch' });
    expect((await change('qwerty123')).body).toMatchObject({
      error: 'weak_password',
      details: { reason: 'common' },
    });
    expect((await change('x'.repeat(129))).body).toMatchObject({
      error: 'weak_password',
      details: { reason: 'too_long' },
    });

    const passwordless = await createTestUser(service.service.db, { password: null });
    const answer = await api(
      '/auth/password/change',
      { currentPassword: 'anything', newPassword, newPasswordConfirmation: newPassword },
      { token: await mainAuthTokenFor(service, passwordless.id), ip: uniqueIp() },
    );
    expect(answer).toMatchObject({ status: 409, body: { error: 'password_not_set' } });
  });
});

describe('sessions after a password change or reset', () => {
  const deps = (
    revoked: { userId: string; except?: string | undefined; inTransaction: boolean }[],
  ): PasswordDeps => ({
    db: service.service.db,
    clock: service.service.clock,
    transports: service.service.transports,
    rateLimits: service.service.rateLimits,
    issuer: service.issuer,
    passwordHashing: service.service.settings.passwordHashing,
    async revokeOtherSessions(trx: Knex.Transaction, userId: string, exceptSessionId?: string) {
      revoked.push({ userId, except: exceptSessionId, inTransaction: trx.isTransaction === true });
      return 2;
    },
    recordSessionAuthentication: async () => true,
    notifications: new SecurityNotifications({
      transports: service.service.transports,
      messages: Messages.load(),
      clock: service.service.clock,
    }),
  });

  it('a reset revokes every session of the user, in the same transaction', async () => {
    const user = await createTestUser(service.service.db);
    const code = await requestCode(user.email!);
    const revoked: { userId: string; except?: string | undefined; inTransaction: boolean }[] = [];
    const result = await resetPassword(deps(revoked), {
      identifier: user.email!,
      code,
      password: newPassword,
      passwordConfirmation: newPassword,
      ...requestFrom(uniqueIp(), 'test'),
    });
    expect(result).toEqual({ revokedSessions: 2 });
    expect(revoked).toEqual([{ userId: user.id, except: undefined, inTransaction: true }]);
  });

  it('a change revokes the other sessions and keeps the current one', async () => {
    const user = await createTestUser(service.service.db);
    const revoked: { userId: string; except?: string | undefined; inTransaction: boolean }[] = [];
    const sessionId = crypto.randomUUID();
    await changePassword(deps(revoked), {
      userId: user.id,
      sessionId,
      currentPassword: user.password,
      newPassword,
      newPasswordConfirmation: newPassword,
      ...requestFrom(uniqueIp(), 'test'),
    });
    expect(revoked).toEqual([{ userId: user.id, except: sessionId, inTransaction: true }]);
  });
});

describe('API document and development outbox', () => {
  it('documents the password and verification endpoints in the OpenAPI document', async () => {
    const document = (await api('/openapi.json')).body as { paths: Record<string, unknown> };
    for (const path of [
      '/auth/password/forgot',
      '/auth/password/verify-code',
      '/auth/password/reset',
      '/auth/password/change',
      '/auth/verify/send',
      '/auth/verify/confirm',
    ]) {
      expect(document.paths[path], path).toHaveProperty('post');
    }
  });

  it('shows a developer the messages of the development transport (outside production)', async () => {
    const user = await createTestUser(service.service.db);
    const code = await requestCode(user.email!);
    const answer = await api(`/dev/messages?to=${encodeURIComponent(user.email!)}`);
    expect(answer.status).toBe(200);
    const [latest] = (answer.body as { messages: { to: string; code: string; sentAt: string }[] }).messages;
    expect(latest).toMatchObject({ to: user.email, code });
    expect(Number.isNaN(Date.parse(latest!.sentAt))).toBe(false);
  });
});
