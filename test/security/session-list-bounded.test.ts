import { afterAll, beforeAll, expect, it } from 'vitest';
import { listedSessionsAtMost } from '../../src/identity/sessions/sessions.js';
import { listedAppSignInsAtMost } from '../../src/oidc/models/app-sign-ins.js';
import { createTestUser } from '../support/fixtures.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * An account's holder starts sessions at will (a sign-in each, from address after address, each with
 * a 512-character User-Agent), and GET /security/sessions listed every one: thousands of sessions made
 * an answer of megabytes, built on the service's thread, and a client holding many such requests
 * unread kept every one in memory, for everyone. The list is bounded; the current session is in it.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

it('lists a bounded number of sessions, the current one among them, however many the user started', async () => {
  const { db } = service.service;
  const user = await createTestUser(db);
  const current = await startTestSession(service, user.id);
  await db('sessions')
    .where({ id: current })
    .update({ last_activity_at: new Date(Date.now() - 60_000) });
  const now = service.service.clock.now();
  await db.raw(
    `insert into sessions (user_id, auth_method, auth_time, last_authenticated_at, last_activity_at,
       expires_at, user_agent)
     select ?, 'pwd', ?, ?, ?, ?, repeat('x', 512) from generate_series(1, 3000)`,
    [user.id, now, now, now, new Date(now.getTime() + 24 * 60 * 60 * 1000)],
  );

  const token = await mainAuthTokenFor(service, user.id, { sessionId: current });
  const answer = await fetch(service.url('/api/v2/identity/security/sessions'), {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(answer.status).toBe(200);
  const text = await answer.text();
  const { sessions } = JSON.parse(text) as { sessions: { id: string; current: boolean }[] };
  expect(sessions).toHaveLength(listedSessionsAtMost);
  // The least recently active of those listed, yet listed: the user must see which one is theirs.
  expect(sessions.at(-1)).toMatchObject({ id: current, current: true });
  expect(text.length).toBeLessThan(200_000);
});

it('lists a bounded number of sign-ins to applications, the latest first, however many there are', async () => {
  const { db } = service.service;
  const user = await createTestUser(db);
  const now = service.service.clock.now();
  const loginTs = Math.floor(now.getTime() / 1000);
  await db.raw(
    `insert into oidc_payloads (model, id, payload, account_id, expires_at)
     select 'Session', 'flood-' || n, jsonb_build_object('accountId', ?::text, 'loginTs', ? - n), ?, ?
     from generate_series(1, 3000) n`,
    [user.id, loginTs, user.id, new Date(now.getTime() + 24 * 60 * 60 * 1000)],
  );

  const token = await mainAuthTokenFor(service, user.id);
  const answer = await callIdentityApi(service, '/security/app-sign-ins', undefined, { token });
  expect(answer.status).toBe(200);
  const { items } = answer.body as { items: { id: string }[] };
  expect(items).toHaveLength(listedAppSignInsAtMost);
  expect(items.slice(0, 2).map((item) => item.id)).toEqual(['flood-1', 'flood-2']);
});
