import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/digest.js';
import { sessionCleanupTasks } from '../../src/identity/sessions/session-cleanup.js';
import { securityRecordsCleanupTasks } from '../../src/identity/verification/security-records-cleanup.js';
import { cleanupBatchRows, cleanupExpiredRecords } from '../../src/jobs/cleanup-expired-records.js';
import { createTestUser } from '../support/fixtures.js';
import { startTestSession, userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const day = 24 * 60 * 60 * 1000;

describe('hourly cleanup of expired records', () => {
  it('deletes what expired and keeps what is still valid', async () => {
    const { db } = service.service;
    const { client, tokens } = await userWithTokens(service);
    const now = new Date();
    await db('qr_login_requests').insert({
      token_hash: sha256('qr-token'),
      expires_at: new Date(now.getTime() + 120_000),
      created_at: now,
    });
    const live = {
      codes: await db('authorization_codes').where({ client_id: client.clientId }).select('id'),
    };
    expect(live.codes).toHaveLength(1);
    // Nothing has expired yet.
    const first = await cleanupExpiredRecords(db, now);
    expect(first?.oauth_refresh_tokens).toBe(0);
    expect(await db('authorization_codes').where({ client_id: client.clientId })).toHaveLength(1);

    // 31 days later: the code (10 min), the refresh token (30 d), the session and interaction are gone.
    const later = new Date(now.getTime() + 31 * day);
    const deleted = await cleanupExpiredRecords(db, later);
    expect(deleted).toMatchObject({
      authorization_codes: expect.any(Number),
      oauth_refresh_tokens: expect.any(Number),
    });
    expect(await db('authorization_codes').where({ client_id: client.clientId })).toHaveLength(0);
    expect(
      await db('oauth_refresh_tokens').where({ token_hash: sha256(tokens.refresh_token!) }),
    ).toHaveLength(0);
    expect((await db('oidc_payloads').where('expires_at', '<', later)).length).toBe(0);
    // A QR sign-in request is gone once expired, whether or not it was used.
    expect(deleted).toMatchObject({ qr_login_requests: 1 });
    expect(await db('qr_login_requests')).toHaveLength(0);
    // Users and clients are not expiring records.
    expect(await db('oauth_clients').where({ client_id: client.clientId })).toHaveLength(1);
  });

  it('deletes a flood of expired rows in batches, each its own transaction, and reports them all', async () => {
    const { db } = service.service;
    const now = new Date();
    const flood = cleanupBatchRows * 2 + 7;
    const rows = Array.from({ length: flood }, (_, index) => ({
      key: `flood-${index}`,
      points: 1,
      expire: now.getTime() - 1000,
    }));
    await db.batchInsert('rate_limits', rows, 1000);
    await db('rate_limits').insert({ key: 'still-counting', points: 1, expire: now.getTime() + 60_000 });
    // The statements the cleanup sends: its rate-limit deletes and its commits, in order.
    const statements: ('delete' | 'commit')[] = [];
    const onQuery = (query: { sql: string }) => {
      if (/^delete from "rate_limits"/i.test(query.sql)) statements.push('delete');
      else if (/^commit/i.test(query.sql)) statements.push('commit');
    };
    db.on('query', onQuery);
    try {
      const removed = await cleanupExpiredRecords(db, now);
      expect(removed).toMatchObject({ rate_limits: flood });
    } finally {
      db.off('query', onQuery);
    }
    // Two full batches, then the rest, each committed before the next: never the whole flood in one
    // statement, nor in one transaction.
    const deletes = statements.flatMap((statement, index) => (statement === 'delete' ? [index] : []));
    expect(deletes).toHaveLength(3);
    for (const [batch, at] of deletes.entries()) {
      const next = deletes[batch + 1] ?? statements.length;
      expect(statements.slice(at + 1, next)).toContain('commit');
    }
    expect(await db('rate_limits').where('key', 'like', 'flood-%')).toHaveLength(0);
    expect(await db('rate_limits').where({ key: 'still-counting' })).toHaveLength(1);
  });

  it("deletes a flood of a stranger's sign-in counters and a session's tokens in batches too", async () => {
    const { db } = service.service;
    const now = new Date();
    const flood = cleanupBatchRows * 2 + 7;
    const dayAgo = new Date(now.getTime() - 25 * 60 * 60 * 1000);
    // What failed sign-ins with made-up identifiers leave (a ladder each), and a session refreshed
    // from address after address (a token per refresh, all kept until the session expires).
    await db.batchInsert(
      'login_source_lockouts',
      Array.from({ length: flood }, (_, index) => ({
        account: `identifier:flood-${index}@example.com`,
        source: 'ip:192.0.2.1',
        consecutive_failures: 1,
        updated_at: dayAgo,
      })),
      1000,
    );
    const user = await createTestUser(db);
    const session = await startTestSession(service, user.id);
    await db('sessions').where({ id: session }).update({ expires_at: dayAgo });
    await db('refresh_tokens').where({ session_id: session }).update({ expires_at: dayAgo });
    await db.raw(
      `insert into refresh_tokens (token_hash, session_id, user_id, expires_at)
       select md5(random()::text || n), ?, ?, ? from generate_series(1, ?) n`,
      [session, user.id, dayAgo, flood],
    );
    // What each delete statement of those tables removed, in order, with the commits between.
    const statements: (number | 'commit')[] = [];
    const onResponse = (response: unknown, query: { sql: string }) => {
      if (/^delete from "(login_source_lockouts|refresh_tokens|sessions)"/i.test(query.sql)) {
        statements.push(typeof response === 'number' ? response : Number.NaN);
      } else if (/^commit/i.test(query.sql)) statements.push('commit');
    };
    db.on('query-response', onResponse);
    try {
      await cleanupExpiredRecords(db, now, [...securityRecordsCleanupTasks, ...sessionCleanupTasks]);
    } finally {
      db.off('query-response', onResponse);
    }
    const deletes = statements.filter((statement) => statement !== 'commit');
    expect(deletes.length).toBeGreaterThanOrEqual(6);
    for (const removed of deletes) expect(removed).toBeLessThanOrEqual(cleanupBatchRows);
    expect(await db('login_source_lockouts').where('account', 'like', 'identifier:flood-%')).toHaveLength(0);
    expect(await db('refresh_tokens').where({ session_id: session })).toHaveLength(0);
    expect(await db('sessions').where({ id: session })).toHaveLength(0);
  });

  it('is run by one node at a time: concurrent runs do not fail, at most one does the work', async () => {
    const { db } = service.service;
    const results = await Promise.all([
      cleanupExpiredRecords(db, new Date()),
      cleanupExpiredRecords(db, new Date()),
    ]);
    expect(results.filter((result) => result !== undefined).length).toBeGreaterThanOrEqual(1);
  });
});
