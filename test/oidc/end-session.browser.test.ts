import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { signInInChromium } from '../support/chromium-sign-in.js';

import { buildAuthorizationRequest, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// In Debian's chromium (this file runs where chromium is installed; CI installs it).
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const signedOutUri = 'http://localhost:8080/signed-out';

function endSessionUrl(parameters: Record<string, string>): string {
  return `${service.url('/oauth/end_session')}?${new URLSearchParams(parameters)}`;
}

async function activeRefreshTokens(userId: string, clientId: string): Promise<number> {
  const rows = await service.service
    .db('oauth_refresh_tokens')
    .where({ user_id: userId, client_id: clientId })
    .whereNull('revoked_at');
  return rows.length;
}

describe('RP-initiated logout in a real browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  /** A chromium page where the relying party's addresses answer a tiny page. */
  async function relyingPartyPage(): Promise<Page> {
    const context = await browser.newContext();
    await context.route('http://localhost:8080/**', (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>relying party</h1>' }),
    );
    return context.newPage();
  }

  it('shows a spinner on /en/auth/single-logout, continues by itself and lands on the post-logout URI with the state', async () => {
    const page = await relyingPartyPage();
    const { user, client, config, tokens } = await signInInChromium(service, page, {
      postLogoutRedirectUris: [signedOutUri],
    });
    const visited: string[] = [];
    page.on('framenavigated', (frame) => visited.push(frame.url()));
    const logoutUrl = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: signedOutUri,
      state: 'state-123',
    });
    await page.goto(logoutUrl.toString());
    await page.waitForURL(`${signedOutUri}?**`);
    expect(new URL(page.url()).searchParams.get('state')).toBe('state-123');
    expect(visited.some((url) => new URL(url).pathname === '/en/auth/single-logout')).toBe(true);
    expect(await activeRefreshTokens(user.id, client.clientId)).toBe(0);

    // The provider's session is over: the next authorize asks for a login again.
    const again = await buildAuthorizationRequest(config);
    await page.goto(again.url.toString());
    await page.locator('#identifier').waitFor({ state: 'visible' });
  });

  it('asks the user to confirm when the request carries no id_token_hint', async () => {
    const page = await relyingPartyPage();
    const { client } = await signInInChromium(service, page, { postLogoutRedirectUris: [signedOutUri] });
    await page.goto(
      endSessionUrl({ client_id: client.clientId, post_logout_redirect_uri: signedOutUri, state: 's' }),
    );
    const confirm = page.getByTestId('confirm-logout');
    await confirm.waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe('/en/auth/single-logout');
    expect(page.url()).not.toContain('xsrf');
    await confirm.click();
    await page.waitForURL(`${signedOutUri}?**`);
    expect(new URL(page.url()).searchParams.get('state')).toBe('s');
  });
});
