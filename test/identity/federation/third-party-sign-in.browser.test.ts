import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../support/browser.js';
import { expectAccessible } from '../../support/page-checks.js';
import { callbackUri, createTestClient, createTestUser, uniqueEmail } from '../../support/fixtures.js';
import { buildAuthorizationRequest, discover, oidc } from '../../support/relying-party.js';
import type { TestService } from '../../support/test-service.js';
import type { UpstreamProvider } from '../../support/upstream-provider.js';
import { startServiceWithUpstream } from '../../support/service-with-upstream.js';

// In Debian's chromium: the person clicks the provider's button, the upstream (a second oidc-provider)
// signs them in, and the downstream client gets its tokens.
let service: TestService;
let upstream: UpstreamProvider;
let rp: oidc.Configuration;
let browser: Browser;
// Screenshots of the pages axe checked (not committed).
const artifacts = path.resolve('test-artifacts/federation');

beforeAll(async () => {
  ({ service, upstream } = await startServiceWithUpstream({
    upstreamScopes: ['openid', 'email', 'profile'],
  }));
  const { client } = await createTestClient(service.service.db);
  rp = await discover(service.issuer, client.clientId);
  browser = await launchChromium();
  fs.mkdirSync(artifacts, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
  await upstream?.close();
});

async function loginPage(locale = 'en-US') {
  const context = await browser.newContext({ locale });
  await context.route('http://localhost:8080/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>relying party</h1>' }),
  );
  const page = await context.newPage();
  const request = await buildAuthorizationRequest(rp);
  await page.goto(request.url.toString());
  return { page, request };
}

async function tokensAfterConsent(
  page: Page,
  request: Awaited<ReturnType<typeof buildAuthorizationRequest>>,
) {
  await page.click('button[value=allow]');
  await page.waitForURL(`${callbackUri}?**`);
  return oidc.authorizationCodeGrant(rp, new URL(page.url()), {
    pkceCodeVerifier: request.codeVerifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
}

const subject = () => `browser-${crypto.randomBytes(6).toString('hex')}`;

describe('third-party sign-in in a real browser', () => {
  it('a new person signs in with the provider’s button and the client gets tokens for a new account', async () => {
    const account = upstream.addAccount({ sub: subject(), email: uniqueEmail('new'), email_verified: true });
    const { page, request } = await loginPage();
    upstream.script({ account: account.sub });
    await page.click('text=Sign in with Upstream ID');
    const tokens = await tokensAfterConsent(page, request);
    const user = await service.service.db('users').where({ email: account.email }).first();
    expect(tokens.claims()!.sub).toBe(user.id);
  });

  it('an unverified email of an existing account: confirm, sign in with the password, then linked', async () => {
    const existing = await createTestUser(service.service.db);
    const account = upstream.addAccount({ sub: subject(), email: existing.email!, email_verified: false });
    const { page, request } = await loginPage();
    upstream.script({ account: account.sub });
    await page.click('text=Sign in with Upstream ID');
    await expect.poll(() => page.textContent('[data-testid=link-explanation]')).toContain(existing.email!);
    await page.click('[data-testid=link-agree]');
    await page.fill('#identifier', existing.email!);
    await page.click('button[type=submit]');
    await page.fill('#password', existing.password);
    await page.click('button[type=submit]');
    const tokens = await tokensAfterConsent(page, request);
    expect(tokens.claims()!.sub).toBe(existing.id);
    const links = await service.service
      .db('user_auth_methods')
      .where({ type: 'oauth_provider', external_subject: account.sub });
    expect(links).toMatchObject([{ user_id: existing.id }]);
  });

  it('declining at the provider shows why in Russian, and leads back to the sign-in', async () => {
    const { page } = await loginPage('ru-RU');
    upstream.script({ deny: true });
    await page.click('[data-provider=upstream]');
    await expect
      .poll(() => page.textContent('[data-testid=error-description]'))
      .toContain('Вы отказались передавать данные аккаунта Upstream ID');
    await page.click('[data-testid=sign-in-again]');
    await page.waitForSelector('#identifier');
  });

  it('on /ru/auth without a client: the Russian button, the provider, signed in to a session', async () => {
    const account = upstream.addAccount({ sub: subject(), email: uniqueEmail('ru'), email_verified: true });
    const context = await browser.newContext({ locale: 'ru-RU' });
    const page = await context.newPage();
    await page.goto(`${service.issuer}/ru/auth`);
    const button = page.locator('[data-provider=upstream]');
    expect(await button.textContent()).toBe('Войти через Upstream ID');
    await expectAccessible(page, artifacts, 'ru-auth-provider-buttons');
    upstream.script({ account: account.sub });
    await button.click();
    await page.waitForSelector('[data-testid=signed-in]');
    expect(page.url()).toContain('/oauth/providers/upstream/callback');
    expect(await page.textContent('[data-testid=signed-in]')).toBe('Вы вошли');
    await expectAccessible(page, artifacts, 'ru-provider-signed-in');
    // The session is real: its refresh cookie gives an access token for the account.
    const refreshed = await page.evaluate(async () => {
      const response = await fetch('/api/v2/identity/auth/refresh', { method: 'POST' });
      return { status: response.status, body: (await response.json()) as { accessToken?: string } };
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.accessToken).toEqual(expect.any(String));
    await context.close();
  }, 120_000);

  it('on /ru/auth for an OIDC client: the Russian button, the provider, back at the client', async () => {
    const account = upstream.addAccount({
      sub: subject(),
      email: uniqueEmail('ru-rp'),
      email_verified: true,
    });
    const { page, request } = await loginPage('ru-RU');
    await page.waitForURL(/\/ru\/auth\?interaction=/);
    upstream.script({ account: account.sub });
    await page.click('text=Войти через Upstream ID');
    const tokens = await tokensAfterConsent(page, request);
    const user = await service.service.db('users').where({ email: account.email }).first();
    expect(tokens.claims()!.sub).toBe(user.id);
  });
});
