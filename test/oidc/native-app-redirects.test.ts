import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc, signInThroughPages } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * RFC 8252 §7.3: a native app receives the code on a loopback port it opens when it needs it, so the
 * authorization server MUST allow any port for loopback IP redirect URIs; everything else about the
 * URI still matches exactly. Such an app is a native client, which sees the consent screen every time
 * (§8.6: any app on the device could listen on that port).
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

async function nativeClient() {
  const { client } = await createTestClient(service.service.db, {
    redirectUris: ['http://127.0.0.1/callback', 'http://[::1]/callback'],
  });
  return { client, config: await discover(service.issuer, client.clientId) };
}

/** Where authorize sends the browser for a redirect_uri: the sign-in page (accepted) or an error page. */
async function authorizeAnswer(config: oidc.Configuration, redirectUri: string) {
  const { url } = await buildAuthorizationRequest(config, { redirect_uri: redirectUri });
  const response = await fetch(url, { redirect: 'manual' });
  return { status: response.status, location: response.headers.get('location') };
}

describe('loopback redirect URIs of native apps (RFC 8252 §7.3)', () => {
  it('a code reaches the port the app chose, and redeems with the same redirect_uri', async () => {
    const user = await createTestUser(service.service.db);
    const { config } = await nativeClient();
    const redirectUri = 'http://127.0.0.1:53123/callback';
    const browser = new HttpBrowser(service.issuer);
    const request = await buildAuthorizationRequest(config, { redirect_uri: redirectUri });
    const credentials = { identifier: user.email!, password: user.password };
    const page = await signInThroughPages(browser, request.url, { ...credentials, consent: 'allow' });
    expect(page.url.startsWith(`${redirectUri}?`), page.url).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.claims()?.sub).toBe(user.id);
    // No consent is remembered for a native app: the screen shows again, in the same session.
    const again = await buildAuthorizationRequest(config, { redirect_uri: 'http://[::1]:53124/callback' });
    await expect(
      signInThroughPages(browser, again.url, { ...credentials, consent: 'expect-none' }),
    ).rejects.toThrow('the consent screen was shown');
  });

  it('any port on 127.0.0.1 and [::1]; a different path, host or scheme is still refused', async () => {
    const { config } = await nativeClient();
    for (const accepted of ['http://127.0.0.1:61000/callback', 'http://[::1]:61000/callback']) {
      const answer = await authorizeAnswer(config, accepted);
      expect(answer.status, accepted).toBe(303);
      expect(answer.location, accepted).toContain('/auth');
    }
    for (const refused of [
      'http://127.0.0.1:61000/other',
      'http://localhost:61000/callback',
      'https://127.0.0.1:61000/callback',
      'http://127.0.0.2:61000/callback',
    ]) {
      expect((await authorizeAnswer(config, refused)).status, refused).toBe(400);
    }
  });

  it('a native client’s localhost redirect URI keeps exact matching too (RFC 8252 §8.3)', async () => {
    // The engine gives localhost the loopback IP literals' any-port rule; §7.3 asks it only of the
    // IP literals, and `localhost` need not even resolve to this device.
    const { client } = await createTestClient(service.service.db, {
      redirectUris: ['com.example.app:/callback', 'http://localhost:8080/callback'],
      postLogoutRedirectUris: ['http://localhost:8080/signed-out'],
    });
    const config = await discover(service.issuer, client.clientId);
    expect((await authorizeAnswer(config, 'http://localhost:8080/callback')).status).toBe(303);
    for (const refused of ['http://localhost:9999/callback', 'http://localhost/callback']) {
      expect((await authorizeAnswer(config, refused)).status, refused).toBe(400);
    }
    const logout = (uri: string) =>
      fetch(
        service.url(
          `/oauth/end_session?${new URLSearchParams({ client_id: client.clientId, post_logout_redirect_uri: uri })}`,
        ),
        { redirect: 'manual' },
      );
    expect((await logout('http://localhost:8080/signed-out')).status).toBe(200);
    expect((await logout('http://localhost:9999/signed-out')).status).toBe(400);
  });

  it('a web client on localhost keeps exact matching, port included', async () => {
    const { client } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    expect((await authorizeAnswer(config, callbackUri)).status).toBe(303);
    expect((await authorizeAnswer(config, 'http://localhost:9999/callback')).status).toBe(400);
  });
});
