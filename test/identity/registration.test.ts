import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, randomIp } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;

const baseRegistration: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'otp-code', mandatory: true, order: 20 },
  { stepId: 'password', mandatory: true, order: 30 },
];
const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());
afterEach(async () => {
  vi.useRealTimers();
  await replaceFunnel(service.service.db, 'registration', baseRegistration, new Date());
  await replaceFunnel(service.service.db, 'login', baseLogin, new Date());
});

/** One code per address per minute (the resend cooldown): time moves past it instead of sleeping. */
function afterResendCooldown() {
  vi.useFakeTimers({ toFake: ['Date'], now: new Date(Date.now() + 61_000) });
}

const codeTo = (recipient: string) => service.service.developmentMessages.latestTo(recipient)?.code;

/** A registration up to the code step: the code has been sent. */
async function registerUpToCode(identifier: string, ip = randomIp()) {
  const started = await client.start('registration', { ip });
  expect(started.nextStep).toBe('phone-email');
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, { ip });
  expect(identified.nextStep).toBe('otp-code');
  return { sessionId: identified.sessionId, screen: identified.screen, ip };
}

describe('registration by email or phone with a verified method', () => {
  it('registers by email: code, then password; the account has a verified email and can sign in', async () => {
    const email = uniqueEmail('new');
    const { sessionId, screen, ip } = await registerUpToCode(email);
    expect(screen[0]).toMatchObject({ stepId: 'otp-code', data: { identifier: email } });
    const message = service.service.developmentMessages.latestTo(email)!;
    expect(message).toMatchObject({ purpose: 'contact_verify' });
    expect(message.code).toMatch(/^[0-9A-Z]{6}$/);

    const wrong = await client.step(sessionId, 'otp-code', { code: '000000' }, { ip });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_code');
    const verified = await client.pass(sessionId, 'otp-code', { code: message.code }, { ip });
    expect(verified.nextStep).toBe('password');

    const weak = await client.step(verified.sessionId, 'password', { password: 'password' }, { ip });
    expect(weak.status).toBe(400);
    expect(weak.body).toMatchObject({ error: 'weak_password' });
    const done = await client.step(
      verified.sessionId,
      'password',
      { password: 'a fine long passphrase' },
      { ip },
    );
    const signedIn = loginFrom(done);
    expect(done.body.flow).toBe('registration');

    const me = await client.get('/auth/me', { token: signedIn.accessToken });
    expect(me.body).toMatchObject({ id: signedIn.userId, email, emailVerified: true });
    expect(await findPasswordHash(service.service.db, signedIn.userId)).toMatch(/^\$argon2id\$/);
    const events = await listAuditEvents(service.service.db, { userId: signedIn.userId });
    expect(events.map((event) => event.type)).toContain('identity.account.created');

    const login = await client.login(email, 'a fine long passphrase');
    expect(login.userId).toBe(signedIn.userId);
  });

  it('registers by phone', async () => {
    const phone = uniquePhone();
    const { sessionId, ip } = await registerUpToCode(phone);
    const verified = await client.pass(sessionId, 'otp-code', { code: codeTo(phone) }, { ip });
    const done = loginFrom(
      await client.step(verified.sessionId, 'password', { password: 'a fine long passphrase' }, { ip }),
    );
    const me = await client.get('/auth/me', { token: done.accessToken });
    expect(me.body).toMatchObject({ phone, phoneVerified: true, email: null });
  });

  it('tells nobody whether an account exists before the contact is proven; then tells its owner', async () => {
    const user = await createTestUser(service.service.db);
    const existing = await registerUpToCode(user.email!);
    const fresh = await registerUpToCode(uniqueEmail('fresh'));
    // The same answer for a taken and a free address.
    expect(existing.screen[0]!.title).toBe(fresh.screen[0]!.title);
    const taken = await client.step(
      existing.sessionId,
      'otp-code',
      { code: codeTo(user.email!) },
      { ip: existing.ip },
    );
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('account_exists');
    expect(await service.service.db('users').where({ email: user.email })).toHaveLength(1);
  });

  it('refuses to skip a mandatory password', async () => {
    const email = uniqueEmail();
    const { sessionId, ip } = await registerUpToCode(email);
    const verified = await client.pass(sessionId, 'otp-code', { code: codeTo(email) }, { ip });
    const skipped = await client.step(verified.sessionId, 'password', { skip: true }, { ip });
    expect(skipped.status).toBe(400);
    expect(skipped.body.error).toBe('password_required');
  });

  it('password optional where the policy allows: a passwordless account signs in by code only', async () => {
    await replaceFunnel(
      service.service.db,
      'registration',
      baseRegistration.map((step) => (step.stepId === 'password' ? { ...step, mandatory: false } : step)),
      new Date(),
    );
    // While the login funnel asks for a password, skipping it would leave no way in (account rule 5).
    const email = uniqueEmail('passwordless');
    const { sessionId, ip } = await registerUpToCode(email);
    const verified = await client.pass(sessionId, 'otp-code', { code: codeTo(email) }, { ip });
    const refused = await client.step(verified.sessionId, 'password', { skip: true }, { ip });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('password_required');
    expect(await service.service.db('users').where({ email })).toHaveLength(0);

    // The funnel replaced by code-only login: now the account needs no password.
    await replaceFunnel(
      service.service.db,
      'login',
      [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'otp-code', mandatory: true, order: 20 },
      ],
      new Date(),
    );
    const registered = loginFrom(await client.step(verified.sessionId, 'password', { skip: true }, { ip }));
    expect(await findPasswordHash(service.service.db, registered.userId)).toBeUndefined();

    afterResendCooldown();
    const loginIp = randomIp();
    const started = await client.start('login', { ip: loginIp });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: email },
      { ip: loginIp },
    );
    expect(identified.nextStep).toBe('otp-code');
    const sent = await client.step(identified.sessionId, 'otp-code', { send: true }, { ip: loginIp });
    expect(sent.status).toBe(202);
    expect(sent.body.error).toBe('code_sent');
    const code = service.service.developmentMessages.latestTo(email)!.code!;
    const done = loginFrom(await client.step(identified.sessionId, 'otp-code', { code }, { ip: loginIp }));
    expect(done.userId).toBe(registered.userId);
    expect(done.response.body).toMatchObject({ flow: 'login' });
  });

  it('creates one account when two registrations of one address finish together', async () => {
    const email = uniqueEmail('race');
    const first = await registerUpToCode(email);
    const firstVerified = await client.pass(
      first.sessionId,
      'otp-code',
      { code: codeTo(email) },
      { ip: first.ip },
    );
    afterResendCooldown();
    const second = await registerUpToCode(email);
    const secondVerified = await client.pass(
      second.sessionId,
      'otp-code',
      { code: codeTo(email) },
      { ip: second.ip },
    );
    const results = await Promise.all([
      client.step(
        firstVerified.sessionId,
        'password',
        { password: 'a fine long passphrase' },
        { ip: first.ip },
      ),
      client.step(
        secondVerified.sessionId,
        'password',
        { password: 'a fine long passphrase' },
        { ip: second.ip },
      ),
    ]);
    expect(results.map((result) => result.status).sort()).toEqual([200, 409]);
    expect(await service.service.db('users').where({ email })).toHaveLength(1);
  });

  it('a registration funnel without a code step can not create accounts (account rule 3)', async () => {
    await replaceFunnel(
      service.service.db,
      'registration',
      baseRegistration.filter((step) => step.stepId !== 'otp-code'),
      new Date(),
    );
    const email = uniqueEmail();
    const ip = randomIp();
    const started = await client.start('registration', { ip });
    const identified = await client.pass(started.sessionId, 'phone-email', { identifier: email }, { ip });
    const refused = await client.step(
      identified.sessionId,
      'password',
      { password: 'a fine long passphrase' },
      { ip },
    );
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('verification_required');
    expect(await service.service.db('users').where({ email })).toHaveLength(0);
  });
});
