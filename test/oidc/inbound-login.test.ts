import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disableClient } from '../../src/oidc/models/oauth-client.js';
import { uniqueEmail } from '../support/fixtures.js';
import { MovableClock } from '../support/manual-clock.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { firstPartyClientWithUserToken, requestLoginToken } from './support/inbound-login.js';

const clock = new MovableClock();
let service: TestService;
beforeAll(async () => {
  service = await startTestService({ clock });
});
afterAll(() => service?.close());

async function signInWith(loginToken: unknown) {
  return fetch(service.url('/api/v2/identity/auth/inbound'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ loginToken }),
  });
}

describe('POST /oauth/sso/inbound and POST /api/v2/identity/auth/inbound', () => {
  it('turns a first-party client’s user token into a one-time login token that starts a session once', async () => {
    const parties = await firstPartyClientWithUserToken(service);
    const issued = await requestLoginToken(service, parties, {
      access_token: parties.accessToken,
    });
    expect(issued.status).toBe(201);
    expect(issued.headers.get('cache-control')).toBe('no-store');
    const body = (await issued.json()) as { login_token: string; expires_in: number; login_url: string };
    expect(body.expires_in).toBe(60);
    expect(body.login_url).toBe(`${service.issuer}/inbound-login.html#login_token=${body.login_token}`);
    const rows = await service.service.db('inbound_login_tokens').where({ user_id: parties.user.id });
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(body.login_token);

    const signedIn = await signInWith(body.login_token);
    expect(signedIn.status).toBe(200);
    expect(await signedIn.json()).toMatchObject({
      status: 'completed',
      userId: parties.user.id,
      tokenType: 'Bearer',
    });
    expect(
      signedIn.headers.getSetCookie().some((cookie) => cookie.startsWith('service_id_refresh_token=')),
    ).toBe(true);
    const again = await signInWith(body.login_token);
    expect(again.status).toBe(401);
    expect(await again.json()).toMatchObject({ error: 'invalid_login_token' });
  });

  it('refuses a client that is not first-party', async () => {
    const parties = await firstPartyClientWithUserToken(service, { firstParty: false });
    const answer = await requestLoginToken(service, parties, { access_token: parties.accessToken });
    expect(answer.status).toBe(403);
  });

  it('refuses a wrong client secret and a token issued to another client', async () => {
    const parties = await firstPartyClientWithUserToken(service);
    const other = await firstPartyClientWithUserToken(service);
    const wrongSecret = await requestLoginToken(
      service,
      { clientId: parties.client.clientId, clientSecret: 'wrong' },
      { access_token: parties.accessToken },
    );
    expect(wrongSecret.status).toBe(401);
    expect(await wrongSecret.json()).toMatchObject({ error: 'invalid_client' });
    const foreign = await requestLoginToken(service, parties, { access_token: other.accessToken });
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toMatchObject({ error: 'invalid_token' });
    const garbage = await requestLoginToken(service, parties, { access_token: 'not-a-jwt' });
    expect(garbage.status).toBe(400);
    const malformed = await requestLoginToken(service, parties, { token: parties.accessToken });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: 'invalid_request' });
    expect(
      await service.service.db('inbound_login_tokens').where({ client_id: parties.client.clientId }),
    ).toHaveLength(0);
  });

  it('refuses a login token once its client is disabled or no longer first-party', async () => {
    const { db } = service.service;
    const issue = async () => {
      const parties = await firstPartyClientWithUserToken(service);
      const issued = await requestLoginToken(service, parties, { access_token: parties.accessToken });
      expect(issued.status).toBe(201);
      return { parties, loginToken: ((await issued.json()) as { login_token: string }).login_token };
    };
    const disabled = await issue();
    await disableClient(db, disabled.parties.clientId, new Date());
    const demoted = await issue();
    await db('oauth_clients').where({ client_id: demoted.parties.clientId }).update({ first_party: false });

    for (const { parties, loginToken } of [disabled, demoted]) {
      const answer = await signInWith(loginToken);
      expect(answer.status).toBe(401);
      expect(await answer.json()).toMatchObject({ error: 'invalid_login_token' });
      expect(await db('sessions').where({ user_id: parties.user.id })).toHaveLength(0);
    }
  });

  it('refuses a token not granted roles: a main-auth session carries the user’s whole authority', async () => {
    // A super_admin signs in to a first-party application that asked only for openid: the application
    // must not trade that token for a session that administers the service.
    const parties = await firstPartyClientWithUserToken(service, {
      scope: 'openid profile',
      roles: ['super_admin'],
    });
    expect(decodeJwt(parties.accessToken).permissions).toBeUndefined();
    const answer = await requestLoginToken(service, parties, { access_token: parties.accessToken });
    expect(answer.status).toBe(403);
    expect(await answer.json()).toMatchObject({ error: 'insufficient_scope', details: { scope: 'roles' } });
    expect(await service.service.db('inbound_login_tokens').where({ user_id: parties.user.id })).toHaveLength(
      0,
    );
  });

  it('refuses a login token once its client is no longer allowed roles', async () => {
    const { db } = service.service;
    const parties = await firstPartyClientWithUserToken(service, { roles: ['super_admin'] });
    const issued = await requestLoginToken(service, parties, { access_token: parties.accessToken });
    expect(issued.status).toBe(201);
    const { login_token: loginToken } = (await issued.json()) as { login_token: string };
    await db('oauth_clients')
      .where({ client_id: parties.clientId })
      .update({ allowed_scopes: ['openid', 'profile', 'email'] });
    const answer = await signInWith(loginToken);
    expect(answer.status).toBe(401);
    expect(await answer.json()).toMatchObject({ error: 'invalid_login_token' });
    expect(await db('sessions').where({ user_id: parties.user.id })).toHaveLength(0);
  });

  it('refuses an unknown login token and a malformed body', async () => {
    expect((await signInWith('no-such-token')).status).toBe(401);
    expect((await signInWith(42)).status).toBe(400);
  });
});

describe('an inbound login is no fresh authentication', () => {
  /** The main-auth session an inbound login starts from the first-party client's user token. */
  async function inboundSession(parties: Awaited<ReturnType<typeof firstPartyClientWithUserToken>>) {
    const issued = await requestLoginToken(service, parties, { access_token: parties.accessToken });
    expect(issued.status).toBe(201);
    const { login_token: loginToken } = (await issued.json()) as { login_token: string };
    const signedIn = await signInWith(loginToken);
    expect(signedIn.status).toBe(200);
    return ((await signedIn.json()) as { accessToken: string }).accessToken;
  }

  /** The two re-authentication-gated changes of the probe: a new contact, a TOTP set-up. */
  async function sensitiveChanges(token: string) {
    const call = async (path: string, body: unknown) => {
      const response = await fetch(service.url(`/api/v2/identity${path}`), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: response.status, error: ((await response.json()) as { error?: string }).error };
    };
    return {
      contact: await call('/auth/verify/send', { identifier: uniqueEmail('inbound') }),
      totp: await call('/security/auth-methods/totp/setup', {}),
    };
  }

  it('a recent sign-in at the client passes re-authentication checks', async () => {
    const parties = await firstPartyClientWithUserToken(service);
    const token = await inboundSession(parties);
    expect(await sensitiveChanges(token)).toMatchObject({ contact: { status: 200 }, totp: { status: 200 } });
  });

  it('the session keeps the sign-in’s auth_time: one older than the window needs re-authentication', async () => {
    const parties = await firstPartyClientWithUserToken(service);
    const signedInAt = decodeJwt(parties.accessToken).auth_time as number;
    // Past the re-authentication window (5 minutes), the client's access token still live (15).
    clock.advance(6 * 60_000);
    const token = await inboundSession(parties);

    expect(decodeJwt(token).auth_time).toBe(signedInAt);
    const [session] = await service.service.db('sessions').where({ user_id: parties.user.id });
    expect(session.auth_time.getTime()).toBe(signedInAt * 1000);
    expect(session.last_authenticated_at.getTime()).toBe(signedInAt * 1000);
    const reauthenticate = { status: 401, error: 'reauthentication_required' };
    expect(await sensitiveChanges(token)).toMatchObject({ contact: reauthenticate, totp: reauthenticate });
  });
});
