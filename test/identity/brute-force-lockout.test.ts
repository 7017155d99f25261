import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { ManualClock } from '../support/manual-clock.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
const clock = new ManualClock();
beforeAll(async () => {
  service = await startTestService({ clock });
});
afterAll(() => service?.close());

const uniqueIp = () => `198.51.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`;
const userAgent = 'Mozilla/5.0 (lockout test)';

interface Outcome {
  status: number;
  body: unknown;
  retryAfter: number | undefined;
}

/** One password login through the auth-flow engine (identifier step, then password step). */
async function login(identifier: string, password: string, ip = uniqueIp()): Promise<Outcome> {
  const { flows } = service.service;
  const request = { ip, userAgent };
  try {
    const started = await flows.start('login', request);
    const identified = await flows.submit(started.session.id, 'phone-email', { identifier }, request);
    if (identified.status !== 'in_progress') throw new Error('expected the password step');
    await flows.submit(identified.session.id, 'password', { password }, request);
    return { status: 200, body: undefined, retryAfter: undefined };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const retryAfter = error.headers['Retry-After'];
    return {
      status: error.status,
      body: error.toBody(),
      retryAfter: retryAfter ? Number(retryAfter) : undefined,
    };
  }
}

const wrong = 'not the right password';

describe('account lockout ladder', () => {
  it('5 failures in a row → 30 s, 10 → 5 min, 20 → blocked 30 min; a success resets it', async () => {
    const user = await createTestUser(service.service.db);
    const identifier = user.email!;
    const failUntilLocked = async (failures: number) => {
      for (let index = 0; index < failures; index++) {
        expect((await login(identifier, wrong)).status).toBe(401);
      }
    };

    await failUntilLocked(5);
    let locked = await login(identifier, user.password);
    expect(locked.status).toBe(429);
    expect(locked.retryAfter).toBe(30);
    expect(locked.body).toMatchObject({
      error: 'too_many_attempts',
      message: 'Too many failed sign-in attempts. Try again in 30 seconds.',
      details: { retryAfterSeconds: 30 },
    });

    // Failures 6 to 9: each one imposes the 30-second wait again.
    for (let failure = 6; failure <= 9; failure++) {
      clock.advanceSeconds(30);
      expect((await login(identifier, wrong)).status).toBe(401);
      expect((await login(identifier, wrong)).retryAfter).toBe(30);
    }
    clock.advanceSeconds(30);
    expect((await login(identifier, wrong)).status).toBe(401); // the 10th
    locked = await login(identifier, user.password);
    expect(locked.retryAfter).toBe(300);
    expect((locked.body as { message: string }).message).toBe(
      'Too many failed sign-in attempts. Try again in 5 minutes.',
    );

    for (let failure = 11; failure <= 20; failure++) {
      clock.advanceSeconds(300);
      expect((await login(identifier, wrong)).status).toBe(401);
    }
    locked = await login(identifier, user.password);
    expect(locked.retryAfter).toBe(1800);
    clock.advanceSeconds(1799);
    expect((await login(identifier, user.password)).retryAfter).toBe(1);
    clock.advanceSeconds(1);

    // The right password after the block: signed in, and the count starts again from zero.
    expect((await login(identifier, user.password)).status).toBe(200);
    await failUntilLocked(4);
    expect((await login(identifier, user.password)).status).toBe(200);
    await failUntilLocked(4);
    expect((await login(identifier, wrong)).status).toBe(401);
    expect((await login(identifier, wrong)).status).toBe(429);
  });

  it('answers a locked account the same way whether the password is right or wrong', async () => {
    const user = await createTestUser(service.service.db);
    for (let index = 0; index < 5; index++) await login(user.email!, wrong);
    const right = await login(user.email!, user.password);
    const wrongAgain = await login(user.email!, wrong);
    expect(right.status).toBe(429);
    expect(right).toEqual(wrongAgain);
  });

  it('locks an identifier no account has exactly like a real one (no enumeration)', async () => {
    const nobody = uniqueEmail('nobody');
    const outcomes = [];
    for (let index = 0; index < 6; index++) outcomes.push(await login(nobody, wrong));
    expect(outcomes.map((outcome) => outcome.status)).toEqual([401, 401, 401, 401, 401, 429]);
    expect(outcomes[0]!.body).toEqual({
      error: 'invalid_credentials',
      message: 'The email, phone or password is not right.',
    });
    expect(outcomes[5]!.retryAfter).toBe(30);
  });

  it('30 parallel wrong passwords get no more attempts than the ladder allows', async () => {
    const user = await createTestUser(service.service.db);
    const outcomes = await Promise.all(Array.from({ length: 30 }, () => login(user.email!, wrong)));
    const statuses = outcomes.map((outcome) => outcome.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(25);

    const failed = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.loginFailed,
    });
    expect(failed).toHaveLength(5);
    const lockouts = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.accountLocked,
    });
    expect(lockouts).toHaveLength(1);
    expect(lockouts[0]!.details).toMatchObject({ identifier: user.email, consecutiveFailures: 5 });
  });

  it('writes every failed and successful login to the audit log with IP, user agent and identifier', async () => {
    const user = await createTestUser(service.service.db);
    const ip = uniqueIp();
    await login(user.email!, wrong, ip);
    await login(user.email!, user.password, ip);
    const [succeeded, failed] = await listAuditEvents(service.service.db, { userId: user.id });
    expect(failed).toMatchObject({
      type: 'identity.login.failed',
      ip,
      userAgent,
      details: { identifier: user.email, method: 'password' },
    });
    expect(succeeded).toMatchObject({
      type: 'identity.login.succeeded',
      ip,
      userAgent,
      details: { method: 'password' },
    });

    const nobody = uniqueEmail('unknown');
    await login(nobody, wrong, ip);
    const anonymous = await listAuditEvents(service.service.db, {
      type: auditEventTypes.loginFailed,
      limit: 5,
    });
    expect(anonymous.find((event) => event.details.identifier === nobody)).toMatchObject({
      userId: null,
      ip,
    });
  });
});

describe('IP throttling', () => {
  it('20 failures from one IP in 10 minutes → 1 minute wait; 50 → blocked 30 minutes', async () => {
    const ip = uniqueIp();
    const user = await createTestUser(service.service.db);
    // Failures against many identifiers, none of which reaches its own account ladder.
    for (let index = 0; index < 20; index++) {
      expect((await login(uniqueEmail('spray'), wrong, ip)).status).toBe(401);
    }
    // Every login from the IP waits, even the right password of another account.
    const delayed = await login(user.email!, user.password, ip);
    expect(delayed.status).toBe(429);
    expect(delayed.retryAfter).toBe(60);
    expect((delayed.body as { message: string }).message).toBe(
      'Too many failed sign-in attempts. Try again in 60 seconds.',
    );
    expect((await login(user.email!, user.password, uniqueIp())).status).toBe(200);

    clock.advanceSeconds(60);
    for (let index = 21; index <= 50; index++) {
      expect((await login(uniqueEmail('spray'), wrong, ip)).status).toBe(401);
    }
    const blocked = await login(user.email!, user.password, ip);
    expect(blocked.retryAfter).toBe(1800);
    const throttled = await listAuditEvents(service.service.db, {
      type: auditEventTypes.ipThrottled,
      limit: 10,
    });
    expect(throttled.filter((event) => event.ip === ip).map((event) => event.details.failures)).toEqual([
      50, 20,
    ]);

    clock.advanceSeconds(1800);
    expect((await login(user.email!, user.password, ip)).status).toBe(200);
  });

  it('holds under parallel requests: of 30 parallel failures from one IP, 20 are judged', async () => {
    const ip = uniqueIp();
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () => login(uniqueEmail('burst'), wrong, ip)),
    );
    const statuses = outcomes.map((outcome) => outcome.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(10);
  });

  it('a successful login does not count as a failure of its IP', async () => {
    const ip = uniqueIp();
    const user = await createTestUser(service.service.db);
    for (let index = 0; index < 25; index++) {
      expect((await login(user.email!, user.password, ip)).status).toBe(200);
    }
    for (let index = 0; index < 4; index++) expect((await login(uniqueEmail(), wrong, ip)).status).toBe(401);
    expect((await login(user.email!, user.password, ip)).status).toBe(200);
  });
});
