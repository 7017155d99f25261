import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerCall } from '../support/bearer-call.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { MovableClock } from '../support/manual-clock.js';
import { completeAuthorization, discover } from '../support/relying-party.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { firstPartyClientWithUserToken, requestLoginToken } from './support/inbound-login.js';

const clock = new MovableClock();
let service: TestService;
let adminToken: string;
beforeAll(async () => {
  service = await startTestService({ clock });
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

const call = (method: string, path: string, token: string, body?: unknown) =>
  bearerCall(service, method, path, token, body);

/** A super_admin signed in to a first-party client with the roles scope: a token with their authority. */
async function firstPartyAdminToken() {
  const { db } = service.service;
  const user = await createTestUser(db, { roles: ['super_admin'] });
  const { client } = await createTestClient(db, { firstParty: true });
  const config = await discover(service.issuer, client.clientId);
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: user.email!,
    password: user.password,
    parameters: { scope: 'openid roles' },
  });
  return { user, token: tokens.access_token };
}

const invalidToken = { status: 401, body: { error: 'unauthorized' } };

describe('a disabled user’s OAuth tokens act nowhere', () => {
  it('a disabled administrator’s first-party token loses the admin and platform APIs and can’t re-enable them', async () => {
    const { user, token } = await firstPartyAdminToken();
    expect((await call('GET', '/api/v2/admin/users', token)).status).toBe(200);

    const disabled = await call('POST', `/api/v2/admin/users/${user.id}/disable`, adminToken);
    expect(disabled).toMatchObject({ status: 200, body: { status: 'disabled' } });

    const list = await call('GET', '/api/v2/admin/users', token);
    expect(list).toMatchObject(invalidToken);
    expect(list.challenge).toContain('error="invalid_token"');
    expect(await call('POST', `/api/v2/admin/users/${user.id}/enable`, token)).toMatchObject(invalidToken);
    expect(
      await call('POST', '/api/v2/platform/feature-flags', token, { key: `disabled_${Date.now()}` }),
    ).toMatchObject(invalidToken);
    expect(await service.service.db('users').where({ id: user.id }).first('status')).toEqual({
      status: 'disabled',
    });
  });

  it('a user disabled by another node is refused here within seconds', async () => {
    const { user, token } = await firstPartyAdminToken();
    expect((await call('GET', '/api/v2/admin/users', token)).status).toBe(200);
    // Another node's disable: only the database knows.
    await service.service.db('users').where({ id: user.id }).update({ status: 'disabled' });
    clock.advance(6_000);
    expect(await call('GET', '/api/v2/admin/users', token)).toMatchObject(invalidToken);
  });
});

describe('inbound SSO refuses a disabled user', () => {
  it('no login token for their access token, and one made before the disable starts no session', async () => {
    const parties = await firstPartyClientWithUserToken(service);
    const before = await requestLoginToken(service, parties, { access_token: parties.accessToken });
    expect(before.status).toBe(201);
    const { login_token: loginToken } = (await before.json()) as { login_token: string };

    expect((await call('POST', `/api/v2/admin/users/${parties.user.id}/disable`, adminToken)).status).toBe(
      200,
    );
    const after = await requestLoginToken(service, parties, { access_token: parties.accessToken });
    expect(after.status).toBe(400);
    expect(await after.json()).toMatchObject({ error: 'invalid_token' });

    const signIn = await fetch(service.url('/api/v2/identity/auth/inbound'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ loginToken }),
    });
    expect(signIn.status).toBe(401);
    expect(await signIn.json()).toMatchObject({ error: 'invalid_login_token' });
    expect(
      signIn.headers.getSetCookie().some((cookie) => cookie.startsWith('service_id_refresh_token=')),
    ).toBe(false);
    expect(await service.service.db('sessions').where({ user_id: parties.user.id })).toHaveLength(0);
  });
});
