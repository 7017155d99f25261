import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUserById } from '../../src/identity/users/user.js';
import { bearerCall } from '../support/bearer-call.js';
import { callbackUri, createTestClient, createTestUser, uniqueEmail } from '../support/fixtures.js';
import { MovableClock } from '../support/manual-clock.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient } from './support/identity-client.js';

const clock = new MovableClock();
let service: TestService;
let client: IdentityClient;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

/** A user signed in through the API, then logged out: what a thief holding the old access token has. */
async function loggedOut() {
  const user = await createTestUser(service.service.db);
  const login = await client.login(user.email!, user.password);
  expect((await client.get('/auth/me', { token: login.accessToken })).status).toBe(200);
  expect((await client.post('/auth/logout', undefined, { cookie: login.refreshCookie })).status).toBe(200);
  return { user, token: login.accessToken };
}

describe('the access token of an ended session', () => {
  it('is refused by every identity route that acts on the account (all bearer operations)', async () => {
    const { token } = await loggedOut();
    const document = (await client.get('/openapi.json')).body as {
      paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
    };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, operation]) => operation.security?.some((scheme) => 'bearer' in scheme))
        .map(([method, _operation]) => ({
          method: method.toUpperCase(),
          path: path.replace('{id}', crypto.randomUUID()).replace('{type}', 'totp'),
        })),
    );
    // The routes of the probe's finding and the rest of the account's settings are all there.
    expect(operations.map((operation) => `${operation.method} ${operation.path}`)).toEqual(
      expect.arrayContaining([
        'GET /auth/me',
        'POST /auth/verify/send',
        'POST /auth/verify/confirm',
        'POST /auth/password/change',
        'GET /security/sessions',
        'POST /security/sessions/revoke-all',
        'GET /security/auth-methods',
        'POST /security/auth-methods/totp/setup',
        'DELETE /security/auth-methods/totp',
      ]),
    );
    for (const operation of operations) {
      const answer = await client.request(
        operation.method,
        operation.path,
        operation.method === 'GET' ? undefined : {},
        { token },
      );
      expect(answer, `${operation.method} ${operation.path}`).toMatchObject({
        status: 401,
        body: { error: 'session_ended' },
      });
    }
  });

  it('cannot replace the email (the probe: verify/send + verify/confirm after logout)', async () => {
    const { user, token } = await loggedOut();
    const attacker = uniqueEmail('attacker');
    const sent = await client.post('/auth/verify/send', { identifier: attacker }, { token });
    expect(sent).toMatchObject({ status: 401, body: { error: 'session_ended' } });
    expect(service.service.developmentMessages.latestTo(attacker)).toBeUndefined();
    const confirmed = await client.post(
      '/auth/verify/confirm',
      { identifier: attacker, code: '123456' },
      { token },
    );
    expect(confirmed.status).toBe(401);
    expect(await findUserById(service.service.db, user.id)).toMatchObject({ email: user.email });
  });

  it('cannot withdraw a consent (DELETE /oauth/consents/:clientId)', async () => {
    const { token } = await loggedOut();
    const { client: oauthClient } = await createTestClient(service.service.db);
    const response = await fetch(service.url(`/oauth/consents/${oauthClient.clientId}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: 'session_ended' });
  });
});

/** An administrator's main-auth token at the service's other APIs: each answer's status and error code. */
async function administration(token: string, userId: string) {
  const call = async (method: string, path: string, body?: unknown) => {
    const answer = await bearerCall(service, method, path, token, body);
    return { status: answer.status, error: answer.body.error as string | undefined };
  };
  return {
    users: await call('GET', '/api/v2/admin/users'),
    unlock: await call('POST', `/api/v2/admin/users/${userId}/unlock`),
    dashboards: await call('GET', '/api/v2/management/dashboards/sales?from=2026-01-01&to=2026-02-01'),
    featureFlags: await call('POST', '/api/v2/platform/feature-flags', {
      key: `ended_${crypto.randomBytes(4).toString('hex')}`,
    }),
    register: await call('POST', '/oauth/clients/register', {
      name: 'Ended session',
      type: 'public',
      redirect_uris: [callbackUri],
      scopes: ['openid'],
    }),
  };
}

const ended = { status: 401, error: 'session_ended' };
const refusedEverywhere = {
  users: ended,
  unlock: ended,
  dashboards: ended,
  featureFlags: ended,
  register: ended,
};

describe('an administrator’s access token of an ended session', () => {
  it('is refused at once by the admin, platform and management APIs and client registration', async () => {
    const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
    const login = await client.login(admin.email!, admin.password);
    expect(await administration(login.accessToken, admin.id)).toMatchObject({
      users: { status: 200 },
      unlock: { status: 200 },
      dashboards: { status: 200 },
      featureFlags: { status: 201 },
      register: { status: 201 },
    });
    expect((await client.post('/auth/logout', undefined, { cookie: login.refreshCookie })).status).toBe(200);
    expect(await administration(login.accessToken, admin.id)).toMatchObject(refusedEverywhere);
  });

  it('is refused within seconds when another node revoked the session', async () => {
    const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
    const login = await client.login(admin.email!, admin.password);
    expect((await administration(login.accessToken, admin.id)).users.status).toBe(200);
    // Another node's revocation (or a password change there): only the database knows.
    await service.service.db('sessions').where({ user_id: admin.id }).update({ is_revoked: true });
    clock.advance(6_000);
    expect(await administration(login.accessToken, admin.id)).toMatchObject(refusedEverywhere);
  });
});
