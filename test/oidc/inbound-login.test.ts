import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';
import { firstPartyClientWithUserToken, requestLoginToken } from './support/inbound-login.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
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

  it('refuses an unknown login token and a malformed body', async () => {
    expect((await signInWith('no-such-token')).status).toBe(401);
    expect((await signInWith(42)).status).toBe(400);
  });
});
