import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFrom } from '../../src/http/request-info.js';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { assertLoginAllowed, recordLoginFailure } from '../../src/identity/brute-force/login-protection.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient } from './support/identity-client.js';

/**
 * The brute-force counters under parallel HTTP requests (on PostgreSQL when DATABASE_URL is set, with
 * a pool of connections, so the requests really race). A login attempt claims its places on the
 * ladder, the account-wide bound and the IP throttle in one statement and gives them back in one
 * (src/identity/brute-force/claim-together.ts): these prove the thresholds still hold exactly, that a
 * counter refusing later in the chain gives back the places taken before it, and that claims and
 * releases racing on the same rows never deadlock (every answer is a 200, 401 or 429).
 */
let service: TestService;
let client: IdentityClient;
// A ladder other than the default, so the count that locks is the configured one.
const ladder = [
  { failures: 3, lockSeconds: 60 },
  { failures: 6, lockSeconds: 600 },
];
beforeAll(async () => {
  service = await startTestService({
    env: { TRUST_PROXY: 'true' },
    settings: {
      lockout: { ladder },
      // Many flows from one address here; the flow endpoints' own per-IP limits are not under test.
      rateLimits: {
        'identity-flow-start': { points: 1000, durationSeconds: 60 },
        'identity-flow-step': { points: 1000, durationSeconds: 60 },
      },
    },
  });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

const uniqueIp = () => `203.0.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`;
const wrong = 'not the right password';

/** One password login over HTTP; answers the password step's status (200, 401 or 429). */
async function login(identifier: string, password: string, ip: string): Promise<number> {
  const options = { ip };
  const started = await client.start('login', options);
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, options);
  const response = await client.step(identified.sessionId, 'password', { password }, options);
  return response.status;
}

const parallel = (count: number, attempt: () => Promise<number>) =>
  Promise.all(Array.from({ length: count }, attempt));
const count = (statuses: number[], status: number) => statuses.filter((item) => item === status).length;

/** Claims still held on any counter row an attempt of these accounts or addresses touched. */
async function claimsHeld(accounts: string[], ips: string[]): Promise<number> {
  const { db } = service.service;
  const rows: { in_flight: number }[] = [
    ...(await db('login_source_lockouts').whereIn('account', accounts).select('in_flight')),
    ...(await db('login_account_failures').whereIn('account', accounts).select('in_flight')),
    ...(await db('login_ip_throttle').whereIn('ip', ips).select('in_flight')),
  ];
  return rows.reduce((sum, row) => sum + row.in_flight, 0);
}

describe('parallel wrong passwords over HTTP', () => {
  it('lock a source at exactly the configured count: 12 at once, 3 judged, 9 refused', async () => {
    const user = await createTestUser(service.service.db);
    const ip = uniqueIp();
    const statuses = await parallel(12, () => login(user.email!, wrong, ip));
    expect(count(statuses, 401)).toBe(3);
    expect(count(statuses, 429)).toBe(9);

    const row = await service.service
      .db('login_source_lockouts')
      .where({ account: `user:${user.id}`, source: `ip:${ip}` })
      .first();
    expect(row).toMatchObject({ consecutive_failures: 3, in_flight: 0 });
    expect(row.locked_until).not.toBeNull();
    const locks = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.accountLocked,
    });
    expect(locks.map((lock) => lock.details.consecutiveFailures)).toEqual([3]);
    // Locked: the right password from there is refused too, before it is checked.
    expect(await login(user.email!, user.password, ip)).toBe(429);
    expect(await claimsHeld([`user:${user.id}`], [ip])).toBe(0);
  });

  it('an IP refusing last in the chain gives back the places the account counters granted', async () => {
    const ip = uniqueIp();
    // 19 failures from the address (against accounts that don't exist): the 20th brings the wait.
    const protection = { db: service.service.db, clock: service.service.clock };
    for (let index = 0; index < 19; index++) {
      const failure = {
        userId: undefined,
        identifier: uniqueEmail('spray'),
        ...requestFrom(ip, 'test'),
      };
      const claim = await assertLoginAllowed(protection, failure);
      await recordLoginFailure(protection, { ...failure, claim });
    }
    const users = await Promise.all(Array.from({ length: 8 }, () => createTestUser(service.service.db)));
    const statuses = await Promise.all(users.map((user) => login(user.email!, wrong, ip)));
    expect(count(statuses, 401)).toBe(1);
    expect(count(statuses, 429)).toBe(7);
    // Each account's ladder and account-wide count granted a place before the IP refused: all given back.
    const accounts = users.map((user) => `user:${user.id}`);
    expect(await claimsHeld(accounts, [ip])).toBe(0);
    const ladders = await service.service.db('login_source_lockouts').whereIn('account', accounts);
    expect(ladders.map((row: { consecutive_failures: number }) => row.consecutive_failures).sort()).toEqual([
      0, 0, 0, 0, 0, 0, 0, 1,
    ]);
  });

  it('the account-wide bound in the middle of the chain: at 96 failures, 10 parallel guesses from new addresses, 4 judged', async () => {
    const user = await createTestUser(service.service.db);
    const protection = { db: service.service.db, clock: service.service.clock };
    // 96 failures from 48 addresses, 2 each (below every address's own ladder and throttle).
    for (let address = 0; address < 48; address++) {
      const failure = { userId: user.id, identifier: user.email!, ...requestFrom(uniqueIp(), 'test') };
      for (let index = 0; index < 2; index++) {
        const claim = await assertLoginAllowed(protection, failure);
        await recordLoginFailure(protection, { ...failure, claim });
      }
    }
    const ips = Array.from({ length: 10 }, uniqueIp);
    const statuses = await Promise.all(ips.map((ip) => login(user.email!, wrong, ip)));
    expect(count(statuses, 401)).toBe(4);
    expect(count(statuses, 429)).toBe(6);
    const row = await service.service
      .db('login_account_failures')
      .where({ account: `user:${user.id}` })
      .first();
    expect(row.failure_times).toHaveLength(100);
    expect(await claimsHeld([`user:${user.id}`], ips)).toBe(0);
    // Closed to unknown sources, right password or not.
    expect(await login(user.email!, user.password, uniqueIp())).toBe(429);
  });

  it('right and wrong passwords racing on one account from two addresses: no deadlock, exact counts', async () => {
    const user = await createTestUser(service.service.db);
    const owner = uniqueIp();
    const attacker = uniqueIp();
    const statuses = await Promise.all([
      ...Array.from({ length: 10 }, () => login(user.email!, user.password, owner)),
      ...Array.from({ length: 10 }, () => login(user.email!, wrong, attacker)),
    ]);
    // The owner's source never fails: all 10 sign in. The attacker's locks at the configured 3.
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(count(statuses.slice(10), 401)).toBe(3);
    expect(count(statuses.slice(10), 429)).toBe(7);
    expect(await claimsHeld([`user:${user.id}`], [owner, attacker])).toBe(0);
    const account = await service.service
      .db('login_account_failures')
      .where({ account: `user:${user.id}` })
      .first();
    expect(account.failure_times).toHaveLength(3);
  });
});
