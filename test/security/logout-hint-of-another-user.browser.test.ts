import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { signInInChromium } from '../support/chromium-sign-in.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, completeAuthorization, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// Forced logout (RP-Initiated Logout 1.0 §2; ASVS 5 10.6.2): a logout request carrying an ID token
// skips the confirmation, but only an ID token of the person signed in to the browser may do that.
// Anyone can get an ID token of their own account and link a victim to /oauth/end_session with it.
let service: TestService;
let browser: Browser;
beforeAll(async () => {
  service = await startTestService();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

/**
 * A chromium page where http://localhost:8080 answers a tiny page, or, at /go?to=<address>, a page of
 * that site sending the browser on to the address (as another site's page or link would).
 */
async function relyingPartyPage(): Promise<Page> {
  const context = await browser.newContext();
  await context.route('http://localhost:8080/**', (route) => {
    const to = new URL(route.request().url()).searchParams.get('to');
    const onward = to ? `<meta http-equiv="refresh" content="0;url=${to.replaceAll('&', '&amp;')}">` : '';
    return route.fulfill({ status: 200, contentType: 'text/html', body: `${onward}<h1>relying party</h1>` });
  });
  return context.newPage();
}

/**
 * Where an authorization request sent from another site's page ends: the client's callback, with a
 * code or an error (read from the request: a redirect's target is not routed by playwright).
 */
async function callbackOf(page: Page, authorization: URL): Promise<URL> {
  const callback = page.waitForRequest((request) => request.url().startsWith(callbackUri));
  await sendFromAnotherSite(page, authorization.toString());
  return new URL((await callback).url());
}

/** Another site's page sends the browser to `address`. */
const sendFromAnotherSite = (page: Page, address: string) =>
  page.goto(`http://localhost:8080/go?${new URLSearchParams({ to: address })}`);

/** The attacker signs in to some application as themselves, over HTTP, and keeps the ID token. */
async function idTokenOfAnotherAccount(): Promise<string> {
  const { db } = service.service;
  const attacker = await createTestUser(db);
  const { client } = await createTestClient(db);
  const config = await discover(service.issuer, client.clientId);
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: attacker.email!,
    password: attacker.password,
  });
  return tokens.id_token!;
}

describe('a logout link carrying the ID token of another account', () => {
  it('asks the person signed in to the browser before signing them out', async () => {
    const page = await relyingPartyPage();
    const victim = await signInInChromium(service, page);
    const attackersToken = await idTokenOfAnotherAccount();

    // The attacker's page sends the victim's browser to the logout endpoint with the attacker's token.
    await sendFromAnotherSite(
      page,
      `${service.url('/oauth/end_session')}?${new URLSearchParams({ id_token_hint: attackersToken })}`,
    );
    // Its page would have signed the victim out by itself by now; it asks instead.
    await page.waitForLoadState('networkidle');
    expect(new URL(page.url()).pathname).toBe('/en/auth/single-logout');
    expect(await page.getByTestId('confirm-logout').isVisible()).toBe(true);

    // Not signed out meanwhile: the victim's application still signs them in without a login page.
    const again = await buildAuthorizationRequest(victim.config, { prompt: 'none' });
    const answer = await callbackOf(page, again.url);
    expect(answer.searchParams.get('error')).toBeNull();
    expect(answer.searchParams.get('code')).not.toBeNull();
  });

  it("the signed-in person's own ID token still signs them out at once", async () => {
    const page = await relyingPartyPage();
    const { config, tokens } = await signInInChromium(service, page);
    await sendFromAnotherSite(
      page,
      `${service.url('/oauth/end_session')}?${new URLSearchParams({ id_token_hint: tokens.id_token! })}`,
    );
    await page.waitForURL((url) => url.pathname === '/oauth/end_session/success');

    const again = await buildAuthorizationRequest(config, { prompt: 'none' });
    expect((await callbackOf(page, again.url)).searchParams.get('error')).toBe('login_required');
  });
});
