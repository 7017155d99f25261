import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateClient } from '../../src/oidc/models/oauth-client.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser, type Page } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * An administrator takes a redirect URI from a client (its domain lapsed, it was an attacker's): an
 * authorization that asked for that URI before, and whose person signs in or answers the consent
 * screen after, must not deliver its code (or its error and state) there. The engine checks the
 * redirect_uri at /oauth/authorize only, and resumes with the stored one.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const removedUri = 'https://lapsed.example.com/callback';

async function authorizationStartedBefore(removal: 'password' | 'consent') {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client } = await createTestClient(db, { redirectUris: [callbackUri, removedUri] });
  const config = await discover(service.issuer, client.clientId);
  const browser = new HttpBrowser(service.issuer);
  const request = await buildAuthorizationRequest(config, { redirect_uri: removedUri });
  let page = await browser.navigate(request.url.toString());
  page = await browser.submit(page, { identifier: user.email! });
  const removeUri = () => updateClient(db, client.clientId, { redirectUris: [callbackUri] }, new Date());
  if (removal === 'password') await removeUri();
  page = await browser.submit(page, { password: user.password });
  if (removal === 'consent') {
    expect(page.html).toContain('name="decision"');
    await removeUri();
  }
  return { page, browser, config, user };
}

function expectRefusedWithoutRedirect(page: Page) {
  expect(page.url.startsWith(removedUri)).toBe(false);
  expect(new URL(page.url).origin).toBe(service.issuer);
  expect(page.status).toBe(400);
  expect(page.html).toContain('invalid_redirect_uri');
}

describe('a redirect URI removed while an authorization waits for its person', () => {
  it('removed during sign-in: the sign-in ends on an error page, no consent screen, no code sent', async () => {
    const { page } = await authorizationStartedBefore('password');
    expectRefusedWithoutRedirect(page);
  });

  it('removed on the consent screen: neither Allow nor Deny sends the browser there', async () => {
    const allowed = await authorizationStartedBefore('consent');
    expectRefusedWithoutRedirect(await allowed.browser.submit(allowed.page, { decision: 'allow' }));
    const denied = await authorizationStartedBefore('consent');
    expectRefusedWithoutRedirect(await denied.browser.submit(denied.page, { decision: 'deny' }));
  });

  it('a new authorization to a URI still registered works as before', async () => {
    const { page, browser, config } = await authorizationStartedBefore('consent');
    await browser.submit(page, { decision: 'allow' });
    const request = await buildAuthorizationRequest(config);
    const callback = await browser.navigate(request.url.toString());
    expect(callback.url.startsWith(`${callbackUri}?code=`)).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(callback.url), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.access_token).toBeTruthy();
  });
});
