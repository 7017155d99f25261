import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateClient } from '../../src/oidc/models/oauth-client.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, signInThroughPages } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A code sent to a redirect URI that an administrator then takes from the client (its domain lapsed,
 * an attacker's address) is not redeemable any more: whoever holds that URI's codes of the last
 * minutes (and chose their PKCE challenge) gets no tokens after the removal. The engine compares the
 * token request's redirect_uri with the code's only, not with the client's list.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const removedUri = 'https://lapsed.example.com/callback';

async function codeSentTo(redirectUri: string) {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client } = await createTestClient(db, { redirectUris: [callbackUri, removedUri] });
  const config = await discover(service.issuer, client.clientId);
  const request = await buildAuthorizationRequest(config, { redirect_uri: redirectUri });
  const page = await signInThroughPages(new HttpBrowser(service.issuer), request.url, {
    identifier: user.email!,
    password: user.password,
  });
  expect(page.url.startsWith(`${redirectUri}?code=`)).toBe(true);
  return { client, code: new URL(page.url).searchParams.get('code')!, verifier: request.codeVerifier };
}

async function redeem(clientId: string, code: string, verifier: string, redirectUri: string) {
  const response = await fetch(service.url('/oauth/token'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('a code sent to a redirect URI removed since', () => {
  it('is refused with invalid_grant, and issues no token', async () => {
    const { client, code, verifier } = await codeSentTo(removedUri);
    await updateClient(service.service.db, client.clientId, { redirectUris: [callbackUri] }, new Date());
    const answer = await redeem(client.clientId, code, verifier, removedUri);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_grant');
    expect(answer.body.access_token).toBeUndefined();
  });

  it('presented again after its first redemption, revokes what that redemption issued, as before', async () => {
    const { client, code, verifier } = await codeSentTo(removedUri);
    const first = await redeem(client.clientId, code, verifier, removedUri);
    expect(first.status).toBe(200);
    const userinfo = () =>
      fetch(service.url('/oauth/userinfo'), {
        headers: { authorization: `Bearer ${first.body.access_token as string}` },
      }).then((response) => response.status);
    expect(await userinfo()).toBe(200);
    await updateClient(service.service.db, client.clientId, { redirectUris: [callbackUri] }, new Date());

    // A wrong verifier proves nothing: refused, and the first tokens stay.
    expect((await redeem(client.clientId, code, `${verifier}x`, removedUri)).body.error).toBe(
      'invalid_grant',
    );
    expect(await userinfo()).toBe(200);
    // The code's holder presents it again: the engine's sign of a stolen code.
    const again = await redeem(client.clientId, code, verifier, removedUri);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    expect(await userinfo()).toBe(401);
  });

  it('a code of a URI still registered redeems as before, after another URI was removed', async () => {
    const { client, code, verifier } = await codeSentTo(callbackUri);
    await updateClient(service.service.db, client.clientId, { redirectUris: [callbackUri] }, new Date());
    const answer = await redeem(client.clientId, code, verifier, callbackUri);
    expect(answer.status).toBe(200);
    expect(answer.body.access_token).toBeTruthy();
  });
});
