import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { createTestUser } from '../support/fixtures.js';
import { callIdentityApi } from '../support/identity-api-client.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';
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
    await untilWaitingForLocks(db);
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
