import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/database.js';
import { assertLoginAllowed } from '../../src/identity/brute-force/login-protection.js';
import { securityRecordsCleanupTasks } from '../../src/identity/verification/security-records-cleanup.js';
import { cleanupExpiredRecords } from '../../src/jobs/cleanup-expired-records.js';
import { issueVerificationCode } from '../../src/identity/verification/verification-codes.js';
import { createTestDatabase } from '../support/database.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { ManualClock } from '../support/manual-clock.js';

let database: DatabaseHandle;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

describe('hourly cleanup of codes and counters', () => {
  it('expires lapsed codes, deletes what ended a day ago and idle login counters, keeps what is live', async () => {
    const { db } = database;
    const clock = new ManualClock();
    const user = await createTestUser(db);
    const old = uniqueEmail('old');
    await issueVerificationCode(
      { db, clock },
      { identifier: { kind: 'email', value: old }, purpose: 'login' },
    );
    const oldIp = uniqueIp();
    const stranger = uniqueEmail('stranger');
    await assertLoginAllowed(
      { db, clock },
      {
        userId: undefined,
        identifier: stranger,
        ip: oldIp,
        addressBlock: oldIp,
      },
    );
    await assertLoginAllowed({ db, clock }, { userId: user.id, ip: oldIp, addressBlock: oldIp });

    clock.advanceSeconds(25 * 60 * 60);
    const fresh = uniqueEmail('fresh');
    await issueVerificationCode(
      { db, clock },
      { identifier: { kind: 'email', value: fresh }, purpose: 'login' },
    );
    const lapsing = uniqueEmail('lapsing');
    await issueVerificationCode(
      { db, clock },
      { identifier: { kind: 'email', value: lapsing }, purpose: 'login' },
    );
    clock.advanceSeconds(5 * 60);
    const freshIp = uniqueIp();
    await assertLoginAllowed({ db, clock }, { userId: user.id, ip: freshIp, addressBlock: freshIp });
    clock.advanceSeconds(6 * 60);

    const removed = await cleanupExpiredRecords(db, clock.now(), securityRecordsCleanupTasks);
    expect(removed?.verification_codes).toBeGreaterThanOrEqual(1);
    expect(await db('verification_codes').where({ identifier: old }).first()).toBeUndefined();
    expect((await db('verification_codes').where({ identifier: lapsing }).first()).status).toBe('expired');
    // Ladders idle for a day go, of unknown identifiers and of accounts alike; a recent one stays.
    const ladders = (account: string) => db('login_source_lockouts').where({ account }).pluck('source');
    expect(await ladders(`identifier:${stranger}`)).toEqual([]);
    expect(await ladders(`user:${user.id}`)).toEqual([`ip:${freshIp}`]);
    // The account-wide window of the fresh attempt is still open (an hour).
    expect(
      await db('login_account_failures')
        .where({ account: `user:${user.id}` })
        .first(),
    ).toBeDefined();
    expect(
      await db('login_account_failures')
        .where({ account: `identifier:${stranger}` })
        .first(),
    ).toBeUndefined();
    expect(await db('login_ip_throttle').where({ ip: oldIp }).first()).toBeUndefined();
    expect(await db('login_ip_throttle').where({ ip: freshIp }).first()).toBeDefined();
  });
});
