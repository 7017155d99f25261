import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { addressBlock, requestFrom } from '../../src/http/request-info.js';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { AuthFlowEngine } from '../../src/identity/auth-flow/flow-engine.js';
import { StepRegistry } from '../../src/identity/auth-flow/step-registry.js';
import { createOtpCodeStep } from '../../src/identity/auth-flow/steps/otp-code.js';
import { passwordStep } from '../../src/identity/auth-flow/steps/password.js';
import { phoneEmailStep } from '../../src/identity/auth-flow/steps/phone-email.js';
import { assertLoginAllowed, recordLoginFailure } from '../../src/identity/brute-force/login-protection.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { ManualClock } from '../support/manual-clock.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient } from './support/identity-client.js';

let service: TestService;
const clock = new ManualClock();
beforeAll(async () => {
  // TRUST_PROXY: the API logins below come from the address they name in X-Forwarded-For.
  service = await startTestService({ clock, env: { TRUST_PROXY: 'true' } });
});
afterAll(() => service?.close());

// Counted, not drawn at random: two sources of one account that drew the same address were one
// source with twice the failures, and locked it (1 run in ~80 of the sliding-hour test's 40 sources).
let addressesHandedOut = 0;
const uniqueIp = () => {
  const index = addressesHandedOut++;
  return `198.51.${Math.floor(index / 254) % 256}.${(index % 254) + 1}`;
};
const userAgent = 'Mozilla/5.0 (lockout test)';

interface Outcome {
  status: number;
  body: unknown;
  retryAfter: number | undefined;
}

/** Where an attempt comes from: an IP, and the device cookie of the browser if it has one. */
interface From {
  ip: string;
  deviceCookie?: string;
}

async function outcomeOf(attempt: Promise<unknown>): Promise<Outcome> {
  try {
    await attempt;
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

/** One password login through the auth-flow engine (identifier step, then password step). */
async function login(
  identifier: string,
  password: string,
  from: From = { ip: uniqueIp() },
): Promise<Outcome> {
  const { flows } = service.service;
  const request = { ...from, ...requestFrom(from.ip, userAgent) };
  return outcomeOf(
    (async () => {
      const started = await flows.start('login', { ip: from.ip, userAgent });
      const identified = await flows.submit(started.session.id, 'phone-email', { identifier }, request);
      if (identified.status !== 'in_progress') throw new Error('expected the password step');
      const done = await flows.submit(identified.session.id, 'password', { password }, request);
      expect(done.status).toBe('completed');
    })(),
  );
}

/**
 * Failed attempts recorded through the protection exactly as the login steps record them, minus the
 * argon2 work of checking a wrong password (to keep the file fast where failures are only the setup).
 */
async function recordFailures(times: number, attempt: { userId?: string; identifier?: string; ip: string }) {
  const protection = { db: service.service.db, clock };
  for (let index = 0; index < times; index++) {
    const failure = {
      userId: undefined,
      identifier: '',
      ...attempt,
      addressBlock: addressBlock(attempt.ip),
      userAgent,
      method: 'password',
    };
    const claim = await assertLoginAllowed(protection, failure);
    await recordLoginFailure(protection, { ...failure, claim });
  }
}

const wrong = 'not the right password';
const statusesOf = (outcomes: Outcome[]) => outcomes.map((outcome) => outcome.status);
const count = (outcomes: Outcome[], status: number) =>
  outcomes.filter((outcome) => outcome.status === status).length;

describe('account lockout ladder (per account and source)', () => {
  it('5 failures in a row → 30 s, 10 → 5 min, 20 → blocked 30 min; a success resets it', async () => {
    const user = await createTestUser(service.service.db);
    const identifier = user.email!;
    const from = { ip: uniqueIp() };
    const failUntilLocked = async (failures: number) => {
      for (let index = 0; index < failures; index++) {
        expect((await login(identifier, wrong, from)).status).toBe(401);
      }
    };

    await failUntilLocked(5);
    let locked = await login(identifier, user.password, from);
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
      expect((await login(identifier, wrong, from)).status).toBe(401);
      expect((await login(identifier, wrong, from)).retryAfter).toBe(30);
    }
    clock.advanceSeconds(30);
    expect((await login(identifier, wrong, from)).status).toBe(401); // the 10th
    locked = await login(identifier, user.password, from);
    expect(locked.retryAfter).toBe(300);
    expect((locked.body as { message: string }).message).toBe(
      'Too many failed sign-in attempts. Try again in 5 minutes.',
    );

    for (let failure = 11; failure <= 20; failure++) {
      clock.advanceSeconds(300);
      expect((await login(identifier, wrong, from)).status).toBe(401);
    }
    locked = await login(identifier, user.password, from);
    expect(locked.retryAfter).toBe(1800);
    clock.advanceSeconds(1799);
    expect((await login(identifier, user.password, from)).retryAfter).toBe(1);
    clock.advanceSeconds(1);

    // The right password after the block: signed in, and the count starts again from zero.
    expect((await login(identifier, user.password, from)).status).toBe(200);
    await failUntilLocked(4);
    expect((await login(identifier, user.password, from)).status).toBe(200);
    await failUntilLocked(4);
    expect((await login(identifier, wrong, from)).status).toBe(401);
    expect((await login(identifier, wrong, from)).status).toBe(429);
  });

  it('answers a locked source the same way whether the password is right or wrong', async () => {
    const user = await createTestUser(service.service.db);
    const from = { ip: uniqueIp() };
    for (let index = 0; index < 5; index++) await login(user.email!, wrong, from);
    const right = await login(user.email!, user.password, from);
    const wrongAgain = await login(user.email!, wrong, from);
    expect(right.status).toBe(429);
    expect(right).toEqual(wrongAgain);
  });

  it('locks an identifier no account has exactly like a real one (no enumeration)', async () => {
    const nobody = uniqueEmail('nobody');
    const from = { ip: uniqueIp() };
    const outcomes = [];
    for (let index = 0; index < 6; index++) outcomes.push(await login(nobody, wrong, from));
    expect(statusesOf(outcomes)).toEqual([401, 401, 401, 401, 401, 429]);
    expect(outcomes[0]!.body).toEqual({
      error: 'invalid_credentials',
      message: 'The email, phone or password is not right.',
    });
    expect(outcomes[5]!.retryAfter).toBe(30);
  });

  it('30 parallel wrong passwords from one source get no more attempts than the ladder allows', async () => {
    const user = await createTestUser(service.service.db);
    const from = { ip: uniqueIp() };
    const outcomes = await Promise.all(Array.from({ length: 30 }, () => login(user.email!, wrong, from)));
    expect(count(outcomes, 401)).toBe(5);
    expect(count(outcomes, 429)).toBe(25);

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
    expect(lockouts[0]!.details).toMatchObject({
      identifier: user.email,
      scope: 'source',
      source: 'ip',
      consecutiveFailures: 5,
    });
  });

  it('writes every failed and successful login to the audit log with IP, user agent and identifier', async () => {
    const user = await createTestUser(service.service.db);
    const ip = uniqueIp();
    await login(user.email!, wrong, { ip });
    await login(user.email!, user.password, { ip });
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
    await login(nobody, wrong, { ip });
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

describe('malicious lockout: an attacker locks only their own source', () => {
  it('failures from one IP lock that IP out of the account; the owner signs in from another at the same moment', async () => {
    const user = await createTestUser(service.service.db);
    const attacker = { ip: uniqueIp() };
    const owner = { ip: uniqueIp() };
    for (let index = 0; index < 5; index++) await login(user.email!, wrong, attacker);
    expect((await login(user.email!, user.password, attacker)).retryAfter).toBe(30);
    expect((await login(user.email!, user.password, owner)).status).toBe(200);

    // One failure per rung, for hours: the attacker stays locked, the owner is never refused.
    for (let failure = 6; failure <= 21; failure++) {
      clock.advanceSeconds(failure <= 10 ? 30 : failure <= 20 ? 300 : 1800);
      expect((await login(user.email!, wrong, attacker)).status).toBe(401);
      if ([10, 20, 21].includes(failure)) {
        expect((await login(user.email!, user.password, owner)).status).toBe(200);
      }
    }
    expect((await login(user.email!, user.password, attacker)).retryAfter).toBe(1800);
    const [lock] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.accountLocked,
      limit: 1,
    });
    expect(lock).toMatchObject({ ip: attacker.ip, details: { consecutiveFailures: 21, source: 'ip' } });
  });

  it('100 failures an hour from many addresses close the account to unknown sources, not to the owner’s device or a second factor', async () => {
    const user = await createTestUser(service.service.db);
    // The owner signed in on this browser before (the identity API sets the device cookie).
    const signedIn = await new IdentityClient(service).login(user.email!, user.password, { ip: uniqueIp() });
    const deviceCookie = signedIn.deviceCookie!.split('=')[1]!;

    // A distributed attacker: 25 addresses, 4 guesses each (no address reaches its own ladder's rung).
    const attackers = Array.from({ length: 25 }, () => ({ ip: uniqueIp() }));
    for (const from of attackers.slice(1)) await recordFailures(4, { userId: user.id, ...from });
    const guesses = await Promise.all(
      Array.from({ length: 4 }, () => login(user.email!, wrong, attackers[0]!)),
    );
    expect(statusesOf(guesses)).toEqual([401, 401, 401, 401]);
    const [closed] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.accountLocked,
      limit: 1,
    });
    expect(closed!.details).toMatchObject({ scope: 'unknown_sources', failures: 100 });

    // Unknown sources are refused, right password or not, for an hour from the 100th failure.
    const stranger = await login(user.email!, user.password, { ip: uniqueIp() });
    expect(stranger.status).toBe(429);
    expect(stranger.retryAfter).toBe(3600);
    expect((await login(user.email!, wrong, attackers[0]!)).status).toBe(429);

    // The owner's device still gets in, from any address, and it is not a way around the ladder.
    expect((await login(user.email!, user.password, { ip: uniqueIp(), deviceCookie })).status).toBe(200);
    // A device cookie of another account's device makes no source known.
    const other = await createTestUser(service.service.db);
    const otherLogin = await new IdentityClient(service).login(other.email!, other.password, {
      ip: uniqueIp(),
    });
    const foreignDevice = otherLogin.deviceCookie!.split('=')[1]!;
    expect(
      (await login(user.email!, user.password, { ip: uniqueIp(), deviceCookie: foreignDevice })).status,
    ).toBe(429);

    // So does a sign-in that proves a code sent to the owner first (funnel: identifier, code, password).
    const { db, transports, rateLimits } = service.service;
    const codeFirst = new AuthFlowEngine(
      db,
      clock,
      new StepRegistry()
        .register(phoneEmailStep)
        .register(createOtpCodeStep({ transports, rateLimits }))
        .register(passwordStep),
      { stepsFor: async () => ['phone-email', 'otp-code', 'password'] },
    );
    const request = requestFrom(uniqueIp(), userAgent);
    const started = await codeFirst.start('login', request);
    const identified = await codeFirst.submit(
      started.session.id,
      'phone-email',
      { identifier: user.email },
      request,
    );
    if (identified.status !== 'in_progress') throw new Error('expected the otp-code step');
    await outcomeOf(codeFirst.submit(identified.session.id, 'otp-code', {}, request));
    const code = service.service.developmentMessages.latestTo(user.email!)!.code;
    const coded = await codeFirst.submit(identified.session.id, 'otp-code', { code }, request);
    if (coded.status !== 'in_progress') throw new Error('expected the password step');
    const done = await codeFirst.submit(coded.session.id, 'password', { password: user.password }, request);
    expect(done).toMatchObject({ status: 'completed', userId: user.id });

    // An hour after the 100th failure, unknown sources may try again.
    clock.advanceSeconds(3600);
    expect((await login(user.email!, user.password, { ip: uniqueIp() })).status).toBe(200);
  });

  it('the account-wide bound is a sliding hour: no 60 minutes see more than 100 failures', async () => {
    const user = await createTestUser(service.service.db);
    const addresses = (count: number) => Array.from({ length: count }, () => ({ ip: uniqueIp() }));
    for (const from of addresses(15)) await recordFailures(4, { userId: user.id, ...from });
    clock.advanceSeconds(50 * 60);
    for (const from of addresses(10)) await recordFailures(4, { userId: user.id, ...from });
    // 100 in the last 50 minutes: closed until the first 60 are an hour old.
    expect((await login(user.email!, user.password)).retryAfter).toBe(10 * 60);
    clock.advanceSeconds(10 * 60);
    // 40 failures of the last hour remain: 60 more are allowed, not 100.
    for (const from of addresses(15)) await recordFailures(4, { userId: user.id, ...from });
    expect((await login(user.email!, user.password)).retryAfter).toBe(50 * 60);
  });

  it('a known device has a ladder of its own: failures there lock the device, not the owner elsewhere', async () => {
    const user = await createTestUser(service.service.db);
    const signedIn = await new IdentityClient(service).login(user.email!, user.password, { ip: uniqueIp() });
    const device = { ip: uniqueIp(), deviceCookie: signedIn.deviceCookie!.split('=')[1]! };
    for (let index = 0; index < 5; index++) {
      expect((await login(user.email!, wrong, { ...device, ip: uniqueIp() })).status).toBe(401);
    }
    // Locked on the device whatever address it comes from; the same address without the device is free.
    expect((await login(user.email!, user.password, { ...device, ip: uniqueIp() })).retryAfter).toBe(30);
    expect((await login(user.email!, user.password, { ip: device.ip })).status).toBe(200);
  });
});

describe('attempts being checked are not failures', () => {
  it('4 failures, then 10 parallel right passwords from the same source: all 10 sign in', async () => {
    const user = await createTestUser(service.service.db);
    const from = { ip: uniqueIp() };
    for (let index = 0; index < 4; index++) expect((await login(user.email!, wrong, from)).status).toBe(401);
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () => login(user.email!, user.password, from)),
    );
    expect(statusesOf(outcomes)).toEqual(Array(10).fill(200));
    // The successes reset the count: 5 more failures are needed to lock.
    for (let index = 0; index < 5; index++) expect((await login(user.email!, wrong, from)).status).toBe(401);
    expect((await login(user.email!, wrong, from)).status).toBe(429);
  });

  it('10 parallel wrong passwords at 0 failures: exactly 5 judged, the rest 429, the count 5 afterwards', async () => {
    const user = await createTestUser(service.service.db);
    const from = { ip: uniqueIp() };
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => login(user.email!, wrong, from)));
    expect(count(outcomes, 401)).toBe(5);
    expect(count(outcomes, 429)).toBe(5);
    const row = await service.service
      .db('login_source_lockouts')
      .where({ account: `user:${user.id}` })
      .first();
    expect(row).toMatchObject({ consecutive_failures: 5, in_flight: 0 });
    // The 6th failure, after the wait, imposes the 30 s again (a 10th would have meant 5 minutes).
    clock.advanceSeconds(30);
    expect((await login(user.email!, wrong, from)).status).toBe(401);
    expect((await login(user.email!, user.password, from)).retryAfter).toBe(30);
  });

  it('an attempt abandoned mid-check (a crash) holds its place for 30 seconds at most', async () => {
    const user = await createTestUser(service.service.db);
    const from = { ip: uniqueIp() };
    for (let index = 0; index < 4; index++) await login(user.email!, wrong, from);
    // The 5th attempt claims the last place before the lock, and its process dies before the outcome.
    await assertLoginAllowed(
      { db: service.service.db, clock },
      {
        userId: user.id,
        ip: from.ip,
        addressBlock: addressBlock(from.ip),
      },
    );
    clock.advanceSeconds(31);
    expect((await login(user.email!, user.password, from)).status).toBe(200);
  });
});

describe('IP throttling', () => {
  it('20 failures from one IP in 10 minutes → 1 minute wait; 50 → blocked 30 minutes', async () => {
    const ip = uniqueIp();
    const user = await createTestUser(service.service.db);
    // Failures against many identifiers, none of which reaches its own account ladder.
    for (let index = 0; index < 20; index++) {
      expect((await login(uniqueEmail('spray'), wrong, { ip })).status).toBe(401);
    }
    // Every login from the IP waits, even the right password of another account.
    const delayed = await login(user.email!, user.password, { ip });
    expect(delayed.status).toBe(429);
    expect(delayed.retryAfter).toBe(60);
    expect((delayed.body as { message: string }).message).toBe(
      'Too many failed sign-in attempts. Try again in 60 seconds.',
    );
    expect((await login(user.email!, user.password)).status).toBe(200);

    clock.advanceSeconds(60);
    for (let index = 21; index <= 50; index++) {
      expect((await login(uniqueEmail('spray'), wrong, { ip })).status).toBe(401);
    }
    const blocked = await login(user.email!, user.password, { ip });
    expect(blocked.retryAfter).toBe(1800);
    const throttled = await listAuditEvents(service.service.db, {
      type: auditEventTypes.ipThrottled,
      limit: 10,
    });
    expect(throttled.filter((event) => event.ip === ip).map((event) => event.details.failures)).toEqual([
      50, 20,
    ]);

    clock.advanceSeconds(1800);
    expect((await login(user.email!, user.password, { ip })).status).toBe(200);
  });

  it('holds under parallel requests: of 30 parallel failures from one IP, 20 are judged', async () => {
    const ip = uniqueIp();
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () => login(uniqueEmail('burst'), wrong, { ip })),
    );
    expect(count(outcomes, 401)).toBe(20);
    expect(count(outcomes, 429)).toBe(10);
  });

  it('an IP with 19 failures: 10 parallel right passwords all sign in', async () => {
    const ip = uniqueIp();
    for (let index = 0; index < 19; index++)
      await recordFailures(1, { identifier: uniqueEmail('spray'), ip });
    const users = await Promise.all(Array.from({ length: 10 }, () => createTestUser(service.service.db)));
    const outcomes = await Promise.all(users.map((user) => login(user.email!, user.password, { ip })));
    expect(statusesOf(outcomes)).toEqual(Array(10).fill(200));
    // The 20th failure still brings the wait.
    expect((await login(uniqueEmail('spray'), wrong, { ip })).status).toBe(401);
    expect((await login(users[0]!.email!, users[0]!.password, { ip })).retryAfter).toBe(60);
  });

  it('a successful login does not count as a failure of its IP', async () => {
    const ip = uniqueIp();
    const user = await createTestUser(service.service.db);
    for (let index = 0; index < 25; index++) {
      expect((await login(user.email!, user.password, { ip })).status).toBe(200);
    }
    for (let index = 0; index < 4; index++) {
      expect((await login(uniqueEmail(), wrong, { ip })).status).toBe(401);
    }
    expect((await login(user.email!, user.password, { ip })).status).toBe(200);
  });
});
