import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser, type Page } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc, signInThroughPages } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A consent screen shown although the person consented before (a native app, whose identity can't be
 * assured and which sees the screen every time, RFC 8252 §8.6; or a client asking prompt=consent) must
 * name what the authorization gives (ASVS 5 10.7.2). It listed only scopes not consented yet: an empty
 * list, after which Allow gave the app the email, phone, roles and permissions consented earlier, to
 * whichever app on the device had claimed the redirect.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

const scope = 'openid email phone roles';

/** The scopes the consent screen lists. */
function listedScopes(page: Page): string[] {
  return [...page.html.matchAll(/data-scope="([^"]+)"/g)].map((match) => match[1]!).sort();
}

/** Signs in and stops at the consent screen. */
async function consentScreen(
  browser: HttpBrowser,
  url: URL,
  user: { email: string | null; password: string },
) {
  let page = await browser.navigate(url.toString());
  if (page.html.includes('name="identifier"')) {
    page = await browser.submit(page, { identifier: user.email! });
    page = await browser.submit(page, { password: user.password });
  }
  expect(page.html).toContain('name="decision"');
  return page;
}

describe('a consent screen for scopes consented before', () => {
  it('of a native app names every scope the app gets, not an empty list', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const { client } = await createTestClient(db, { redirectUris: ['http://127.0.0.1/callback'] });
    const config = await discover(service.issuer, client.clientId);
    const browser = new HttpBrowser(service.issuer);
    const redirectUri = 'http://127.0.0.1:53123/callback';

    const first = await buildAuthorizationRequest(config, { scope, redirect_uri: redirectUri });
    const firstScreen = await consentScreen(browser, first.url, user);
    expect(listedScopes(firstScreen)).toEqual(['email', 'phone', 'roles']);
    await browser.submit(firstScreen, { decision: 'allow' });

    // Another app on the device claims the port and asks again, as the native app.
    const again = await buildAuthorizationRequest(config, { scope, redirect_uri: redirectUri });
    const screen = await consentScreen(browser, again.url, user);
    expect(listedScopes(screen)).toEqual(['email', 'phone', 'roles']);
    const back = await browser.submit(screen, { decision: 'allow' });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.url), {
      pkceCodeVerifier: again.codeVerifier,
      expectedState: again.state,
      expectedNonce: again.nonce,
    });
    expect(tokens.scope?.split(' ').sort()).toEqual(['email', 'openid', 'phone', 'roles']);
  });

  it('asked for by prompt=consent names every scope the client gets', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const { client } = await createTestClient(db);
    const config = await discover(service.issuer, client.clientId);
    const browser = new HttpBrowser(service.issuer);
    await signInThroughPages(browser, (await buildAuthorizationRequest(config, { scope })).url, {
      identifier: user.email!,
      password: user.password,
    });

    const request = await buildAuthorizationRequest(config, { scope, prompt: 'consent' });
    const screen = await consentScreen(browser, request.url, user);
    expect(listedScopes(screen)).toEqual(['email', 'phone', 'roles']);
    const back = await browser.submit(screen, { decision: 'allow' });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.url), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(decodeJwt(tokens.access_token).scope).toBe('openid email phone roles');
  });

  it('for new scopes of a web client still names only those (the consent record has the rest)', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const { client } = await createTestClient(db);
    const config = await discover(service.issuer, client.clientId);
    const browser = new HttpBrowser(service.issuer);
    await signInThroughPages(
      browser,
      (await buildAuthorizationRequest(config, { scope: 'openid email' })).url,
      {
        identifier: user.email!,
        password: user.password,
      },
    );
    const request = await buildAuthorizationRequest(config, { scope });
    const screen = await consentScreen(browser, request.url, user);
    expect(listedScopes(screen)).toEqual(['phone', 'roles']);
  });
});
