import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp, refreshCookieOf } from './support/identity-client.js';

/**
 * A copy of the refresh cookie refreshed at the moment its owner logs out (a thief refreshing in a loop
 * is one at every moment). On PostgreSQL the two transactions took the session's row and the token's in
 * opposite orders and deadlocked; the logout was mostly the one aborted (500), and the session and the
 * copy's new token lived on. Now whichever comes second waits: the logout always ends the session.
 */
let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

describe('a refresh racing a logout on PostgreSQL', () => {
  it('never makes the logout fail, nor leaves the session a live token', async () => {
    for (let round = 0; round < 10; round++) {
      const user = await createTestUser(service.service.db);
      const ip = randomIp();
      const login = await client.login(user.email!, user.password, { ip });
      const [refreshed, logout] = await Promise.all([
        client.post('/auth/refresh', undefined, { ip, cookie: login.refreshCookie }),
        client.post('/auth/logout', undefined, { ip, cookie: login.refreshCookie }),
      ]);
      expect(logout.status, JSON.stringify(logout.body)).toBe(200);
      const next = refreshCookieOf(refreshed);
      if (next)
        expect((await client.post('/auth/refresh', undefined, { ip, cookie: next })).status).toBe(401);
    }
  }, 60_000);
});
