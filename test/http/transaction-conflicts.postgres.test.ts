import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { createTestUser } from '../support/fixtures.js';
import { callIdentityApi } from '../support/identity-api-client.js';
import { mainAuthToken, startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * PostgreSQL resolves a deadlock by rolling back one of the transactions in it (40P01). The request
 * whose transaction that was wrote nothing and would pass if sent again: it is answered 503 with
 * Retry-After in the endpoint's error shape, as while the database is away, never a 500.
 */
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let service: TestService;

beforeAll(async () => {
  database = await createTestDatabase();
  service = await startTestService({ database });
});
afterAll(async () => {
  await service?.close();
  await database?.close();
});

it('answers 503 with Retry-After to a request whose transaction lost a deadlock, and writes nothing', async () => {
  const user = await createTestUser(service.service.db);
  const token = await mainAuthToken(service, user);
  const other = await startTestSession(service, user.id);
  const db = service.service.db;

  // "Sign out everywhere else" updates the other session, then writes its audit event. This
  // transaction holds the audit log first, then wants the other session's row: a cycle. Its own
  // deadlock check waits 10 s, so PostgreSQL's check (1 s) runs in the request's backend first.
  const answer = await db.transaction(async (trx) => {
    await trx.raw(`set local deadlock_timeout = '10s'`);
    await trx.raw('lock table audit_log in exclusive mode');
    const request = callIdentityApi(service, '/security/sessions/revoke-all', {}, { token });
    await waitUntil(async () => (await waitingOnLocks(db)) > 0);
    // Sent now (a knex builder runs when awaited); it waits for the request's row lock.
    const blocked = trx('sessions')
      .where({ id: other })
      .update({ user_agent: 'held' })
      .then(() => {});
    const answered = await request;
    await blocked;
    return answered;
  });

  expect(answer.status).toBe(503);
  expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(answer.body).toEqual({
    error: 'service_unavailable',
    message: expect.any(String),
    request_id: answer.headers.get('x-request-id'),
  });
  // Nothing of the rolled-back transaction is there; the same request again passes.
  expect(await db('sessions').where({ id: other }).first()).toMatchObject({ is_revoked: false });
  expect(await db('audit_log').where({ user_id: user.id })).toEqual([]);
  const again = await callIdentityApi(service, '/security/sessions/revoke-all', {}, { token });
  expect(again.status).toBe(200);
  expect(await db('sessions').where({ id: other }).first()).toMatchObject({ is_revoked: true });
});

/** Backends of this database waiting for a lock (the request's, once it reaches the audit log). */
async function waitingOnLocks(db: TestService['service']['db']): Promise<number> {
  const { rows } = await db.raw<{ rows: { count: number }[] }>(
    `select count(*)::int as count from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`,
  );
  return rows[0]!.count;
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
