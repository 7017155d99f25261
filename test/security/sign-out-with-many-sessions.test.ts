import { afterAll, beforeAll, expect, it } from 'vitest';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { createTestUser } from '../support/fixtures.js';
import { startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A thief holding a copy of a user's main-auth token starts sessions of their own at will: each QR
 * sign-in they approve with it and take on their own machine is one (so is each inbound SSO login
 * from an application's token), 30 days each, from as many addresses as they have. Past 65,535 of
 * them, ending them all named more session ids in one statement than PostgreSQL binds, and every
 * revocation of the user's sessions failed: the owner's "sign out everywhere", a password change or
 * reset, an administrator's disable. The thief kept every session.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

// Writing and ending 66,000 sessions took 21 s on the embedded database of a 2-core VM in CI, and
// over the suite's 30 s default when the machine was busier.
it('signs out everywhere a user with more sessions than one statement binds', async () => {
  const { db } = service.service;
  const user = await createTestUser(db);
  const copied = await startTestSession(service, user.id);
  const now = service.service.clock.now();
  // The sessions the copied one started by QR approvals, written as the service writes them.
  await db.raw(
    `insert into sessions (user_id, auth_method, auth_time, last_authenticated_at, last_activity_at, expires_at,
       started_by_session_id)
     select ?, 'qr', ?, ?, ?, ?, ? from generate_series(1, 66000)`,
    [user.id, now, now, now, new Date(now.getTime() + 24 * 60 * 60 * 1000), copied],
  );

  const token = await mainAuthTokenFor(service, user.id);
  const answer = await callIdentityApi(service, '/security/sessions/revoke-all', {}, { token });
  expect(answer.status).toBe(200);
  const [{ count }] = (await db('sessions')
    .where({ user_id: user.id, is_revoked: false })
    .count('* as count')) as [{ count: string | number }];
  // Only the owner's own session is left.
  expect(Number(count)).toBe(1);
}, 120_000);
