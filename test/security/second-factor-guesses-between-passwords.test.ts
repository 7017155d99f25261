import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { allowedMethodsSetting } from '../../src/identity/auth-flow/allowed-methods.js';
import { writeSetting } from '../../src/platform/settings/platform-settings.js';
import { createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, MovableClock, randomIp } from '../identity/support/identity-client.js';
import { setUpTotp, totpCode } from '../identity/support/totp-codes.js';

/**
 * Whoever knows a password of an account with an authenticator app must still guess its code, and the
 * lockout ladder (5 wrong in a row → 30 s, 10 → 5 minutes, 20 → 30 minutes) bounds those guesses from
 * one address. The password and the code were counted on one ladder (account and source), and the
 * password's success reset it: typing the known password before every fourth wrong code kept the
 * ladder at zero, so the codes of one address were never locked (only the coarser IP throttle and the
 * hourly account-wide bound were left). Each factor now has a ladder of its own: a right password no
 * longer forgives wrong codes.
 */
const clock = new MovableClock();
let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({
    env: { TRUST_PROXY: 'true' },
    clock,
    settings: {
      // Many flows from one address here; the flow endpoints' own per-IP limits are not under test.
      rateLimits: {
        'identity-flow-start': { points: 1000, durationSeconds: 60 },
        'identity-flow-step': { points: 1000, durationSeconds: 60 },
      },
    },
  });
  client = new IdentityClient(service);
  await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
});
afterAll(() => service?.close());

/** A login flow from `ip` up to the TOTP step, through the right password. */
async function pastThePassword(identifier: string, password: string, ip: string): Promise<string> {
  const started = await client.start('login', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, { ip });
  const passed = await client.pass(identified.sessionId, 'password', { password }, { ip });
  expect(passed.nextStep).toBe('totp');
  return passed.sessionId;
}

describe('wrong authenticator codes between right passwords', () => {
  it('lock the codes of the address after 5 in a row, whatever password came between', async () => {
    const user = await createTestUser(service.service.db);
    const secret = await setUpTotp(client, await client.login(user.email!, user.password), clock);
    clock.advance(30_000);
    const ip = randomIp();
    const right = await totpCode(secret, clock.now());
    const wrong = right === '000000' ? '111111' : '000000';

    for (let round = 0; round < 5; round += 1) {
      const flow = await pastThePassword(user.email!, user.password, ip);
      const guess = await client.step(flow, 'totp', { code: wrong }, { ip });
      expect(guess.status, JSON.stringify(guess.body)).toBe(401);
    }

    // The password is still right, and still accepted; the sixth code in a row waits 30 seconds,
    // even the right one.
    const flow = await pastThePassword(user.email!, user.password, ip);
    const sixth = await client.step(flow, 'totp', { code: right }, { ip });
    expect(sixth.status, JSON.stringify(sixth.body)).toBe(429);
    expect(sixth.body.error).toBe('too_many_attempts');
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    const failed = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.loginFailed,
    });
    expect(failed).toHaveLength(5);

    // Once the wait is over, the right code signs in and the codes' count starts again.
    clock.advance(31_000);
    const later = await pastThePassword(user.email!, user.password, ip);
    const done = await client.step(later, 'totp', { code: await totpCode(secret, clock.now()) }, { ip });
    expect(done.body).toMatchObject({ status: 'completed', userId: user.id });
  });

  it('leave the password of the same address its own count', async () => {
    const user = await createTestUser(service.service.db);
    const secret = await setUpTotp(client, await client.login(user.email!, user.password), clock);
    clock.advance(30_000);
    const ip = randomIp();
    const right = await totpCode(secret, clock.now());
    const wrong = right === '000000' ? '111111' : '000000';
    for (let round = 0; round < 5; round += 1) {
      const flow = await pastThePassword(user.email!, user.password, ip);
      expect((await client.step(flow, 'totp', { code: wrong }, { ip })).status).toBe(401);
    }
    // Codes locked from here; the password is judged as before (a wrong one is a 401, not a 429).
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    const wrongPassword = await client.step(identified.sessionId, 'password', { password: 'not it' }, { ip });
    expect(wrongPassword.status).toBe(401);
  });
});
