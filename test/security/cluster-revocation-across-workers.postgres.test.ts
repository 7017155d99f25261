import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceClient, createTestUser } from '../support/fixtures.js';
import type { PinnedWorker } from '../faults/support/pinned-worker.js';
import { signInOn, startTwoPinnedWorkers } from '../faults/support/pinned-worker.js';

// npm start with HTTP_WORKERS=2: what the owner does on one worker (log out, sign out everywhere) holds
// at once on the other, where a thief holding a copy of the token or cookie calls.
let cluster: Awaited<ReturnType<typeof startTwoPinnedWorkers>>;
let a: PinnedWorker;
let b: PinnedWorker;

beforeAll(async () => {
  cluster = await startTwoPinnedWorkers('warn');
  ({ a, b } = cluster);
}, 90_000);
afterAll(() => cluster?.close());

type Login = Awaited<ReturnType<typeof signInOn>>;

/** What B answers a login's access token (GET /auth/me). */
const meOnB = async (login: Login) =>
  (await b.request('GET', '/api/v2/identity/auth/me', { authorization: `Bearer ${login.accessToken}` }))
    .status;

/** What B answers a login's access token (GET /auth/me) and its refresh cookie (POST /auth/refresh). */
async function answersOnB(login: Login): Promise<{ me: number; refresh: number }> {
  const me = await meOnB(login);
  const refresh = (await b.request('POST', '/api/v2/identity/auth/refresh', { cookie: login.refreshCookie }))
    .status;
  return { me, refresh };
}

describe('a cluster: the owner acts on one worker, the thief calls the other', () => {
  it('a logout on A refuses the copied token and cookie on B at once', async () => {
    const user = await createTestUser(cluster.database.db);
    const login = await signInOn(a, user);
    // B knows the session (and caches it as live).
    expect(await meOnB(login)).toBe(200);
    expect(
      (await a.request('POST', '/api/v2/identity/auth/logout', { cookie: login.refreshCookie })).status,
    ).toBe(200);
    expect(await answersOnB(login)).toEqual({ me: 401, refresh: 401 });
  }, 30_000);

  it('sign out everywhere on A refuses the thief’s session on B at once', async () => {
    const user = await createTestUser(cluster.database.db);
    const owner = await signInOn(a, user);
    const thief = await signInOn(b, user);
    expect(await meOnB(thief)).toBe(200);
    const revoked = await a.request('POST', '/api/v2/identity/security/sessions/revoke-all', {
      authorization: `Bearer ${owner.accessToken}`,
    });
    expect(revoked.status, revoked.body).toBe(200);
    expect(await answersOnB(thief)).toEqual({ me: 401, refresh: 401 });
  }, 30_000);

  it('an administrator’s disable on A refuses the user’s token and cookie on B at once', async () => {
    const admin = await createTestUser(cluster.database.db, { roles: ['super_admin'] });
    const adminLogin = await signInOn(a, admin);
    const user = await createTestUser(cluster.database.db);
    const login = await signInOn(b, user);
    expect(await meOnB(login)).toBe(200);
    const disabled = await a.request('POST', `/api/v2/admin/users/${user.id}/disable`, {
      authorization: `Bearer ${adminLogin.accessToken}`,
    });
    expect(disabled.status, disabled.body).toBe(200);
    expect(await answersOnB(login)).toEqual({ me: 401, refresh: 401 });
  }, 30_000);

  it('a secret rotated on A is refused on B at once; a client deleted on A gets no token on B', async () => {
    const admin = await createTestUser(cluster.database.db, { roles: ['super_admin'] });
    const adminBearer = { authorization: `Bearer ${(await signInOn(a, admin)).accessToken}` };
    const { client, clientSecret } = await createServiceClient(cluster.database.db, [
      'service:crm.aggregates.read',
    ]);
    const tokenRequest = (secret: string) =>
      b.request(
        'POST',
        '/oauth/token',
        {
          authorization: `Basic ${Buffer.from(`${client.clientId}:${secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        'grant_type=client_credentials',
      );
    expect((await tokenRequest(clientSecret!)).status).toBe(200);
    const rotated = await a.request(
      'POST',
      `/api/v2/admin/oauth-clients/${client.clientId}/rotate-secret`,
      adminBearer,
    );
    expect(rotated.status, rotated.body).toBe(200);
    const newSecret = (JSON.parse(rotated.body) as { client_secret: string }).client_secret;
    expect((await tokenRequest(clientSecret!)).status).toBe(401);
    expect((await tokenRequest(newSecret)).status).toBe(200);
    const deleted = await a.request('DELETE', `/api/v2/admin/oauth-clients/${client.clientId}`, adminBearer);
    expect(deleted.status, deleted.body).toBeLessThan(300);
    expect((await tokenRequest(newSecret)).status).toBe(401);
  }, 30_000);
});
