import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { signInInChromium } from '../support/chromium-sign-in.js';
import { callbackUri } from '../support/fixtures.js';
import { buildAuthorizationRequest, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// Authorization and logout requests sent by POST (OpenID Connect Core §3.1.2.1, RP-Initiated Logout
// §2), from a relying party on another site than the provider (localhost against 127.0.0.1), in
// Debian's chromium: its SameSite rules decide whether the provider sees who is signed in.
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

const signedOutUri = 'http://localhost:8080/signed-out';

/** A page of the relying party that POSTs `fields` to `action` as soon as it loads. */
function autoPostingPage(action: string, fields: URLSearchParams): string {
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  const inputs = [...fields]
    .map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`)
    .join('');
  return `<form method="post" action="${escape(action)}">${inputs}</form><script>document.forms[0].submit()</script>`;
}

/** Chromium with the relying party's site (http://localhost:8080) answering from `pages`. */
async function relyingPartyPage(pages: Map<string, string>): Promise<Page> {
  const context = await browser.newContext();
  await context.route('http://localhost:8080/**', (route) =>
    route.fulfill({
      status: 200,
      contentType: 'text/html',
      body: pages.get(new URL(route.request().url()).pathname) ?? '<h1>relying party</h1>',
    }),
  );
  return context.newPage();
}

describe('requests sent by POST from the relying party’s site', () => {
  it('an authorization request by POST sees the signed-in user: prompt=none gets a code', async () => {
    const pages = new Map<string, string>();
    const page = await relyingPartyPage(pages);
    const { user, config } = await signInInChromium(service, page, {
      postLogoutRedirectUris: [signedOutUri],
    });

    const request = await buildAuthorizationRequest(config, { prompt: 'none' });
    const endpoint = `${request.url.origin}${request.url.pathname}`;
    pages.set('/sign-in', autoPostingPage(endpoint, request.url.searchParams));
    await page.goto('http://localhost:8080/sign-in');
    await page.waitForURL(`${callbackUri}?**`);

    const answer = new URL(page.url());
    expect(answer.searchParams.get('error')).toBeNull();
    const tokens = await oidc.authorizationCodeGrant(config, answer, {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.claims()!.sub).toBe(user.id);
  });

  it('a logout request by POST ends the session and returns to the post-logout URI', async () => {
    const pages = new Map<string, string>();
    const page = await relyingPartyPage(pages);
    const { user, client, config, tokens } = await signInInChromium(service, page, {
      postLogoutRedirectUris: [signedOutUri],
    });

    const logout = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: signedOutUri,
      state: 'state-by-post',
    });
    pages.set('/sign-out', autoPostingPage(`${logout.origin}${logout.pathname}`, logout.searchParams));
    await page.goto('http://localhost:8080/sign-out');
    await page.waitForURL(`${signedOutUri}?**`);
    expect(new URL(page.url()).searchParams.get('state')).toBe('state-by-post');

    const refreshTokens = await service.service
      .db('oauth_refresh_tokens')
      .where({ user_id: user.id, client_id: client.clientId })
      .whereNull('revoked_at');
    // Revoked by the logout of a verified id_token_hint (actions/end-session.ts), as by GET.
    expect(refreshTokens).toHaveLength(0);
    // The provider's session is over: the next authorize asks for a login again.
    const again = await buildAuthorizationRequest(config);
    await page.goto(again.url.toString());
    await page.locator('#identifier').waitFor({ state: 'visible' });
  });

  it('a repeated parameter in the form is refused with the error page, as in a query', async () => {
    const response = await fetch(service.url('/oauth/authorize'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'client_id=a&client_id=b&response_type=code',
      redirect: 'manual',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(response.headers.get('location')).toBeNull();
  });
});
