import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { firstPartyClientWithUserToken, requestLoginToken } from './support/inbound-login.js';

let service: TestService;
let browser: Browser;
beforeAll(async () => {
  // Behind a proxy: each browser gets an address of its own, so that a dozen sign-ins in a minute stay
  // under the per-address limit of the inbound login.
  [service, browser] = await Promise.all([
    startTestService({ env: { TRUST_PROXY: 'true' } }),
    launchChromium(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

async function freshLoginUrl() {
  const parties = await firstPartyClientWithUserToken(service);
  const answer = await requestLoginToken(service, parties, { access_token: parties.accessToken });
  const { login_url } = (await answer.json()) as { login_url: string };
  return { parties, loginUrl: login_url };
}

describe('/inbound-login.html in a real browser', () => {
  it('signs the person in and lands on return_to; the refresh cookie then gives their access token', async () => {
    const { parties, loginUrl } = await freshLoginUrl();
    const context = await browser.newContext({ extraHTTPHeaders: { 'x-forwarded-for': uniqueIp() } });
    try {
      const page = await context.newPage();
      await page.goto(`${loginUrl}&return_to=${encodeURIComponent('/en/reset-password?from=sso')}`);
      await page.waitForURL(`${service.issuer}/en/reset-password?from=sso`);
      const refreshed = await page.evaluate(async () => {
        const response = await fetch('/api/v2/identity/auth/refresh', { method: 'POST' });
        return { status: response.status, body: (await response.json()) as { accessToken?: string } };
      });
      expect(refreshed.status).toBe(200);
      const payload = JSON.parse(
        Buffer.from(refreshed.body.accessToken!.split('.')[1]!, 'base64url').toString(),
      ) as { sub: string };
      expect(payload.sub).toBe(parties.user.id);
    } finally {
      await context.close();
    }
  });

  it('never leaves the site for a return_to of another host, and says when the link is used up', async () => {
    const { loginUrl: url } = await freshLoginUrl();
    const context = await browser.newContext({ extraHTTPHeaders: { 'x-forwarded-for': uniqueIp() } });
    try {
      const page = await context.newPage();
      await page.goto(`${url}&return_to=${encodeURIComponent('//evil.example/steal')}`);
      await page.waitForURL(`${service.issuer}/`);
      const reused = await context.newPage();
      await reused.goto(url);
      await reused.getByTestId('sign-in-again').waitFor();
      expect(await reused.getByRole('heading', { level: 1, name: /does not work/ }).isVisible()).toBe(true);
    } finally {
      await context.close();
    }
  });

  // The browser's URL parser drops tabs and newlines and reads a backslash as a slash: each of these
  // would end on another site if the page only looked at the text.
  it.each([
    ['a tab', '/\t/evil.example/pwned'],
    ['a newline', '/\n/evil.example/pwned'],
    ['a carriage return', '/\r/evil.example/pwned'],
    ['a tab then a backslash', '/\t\\evil.example/pwned'],
    ['a backslash', '/\\evil.example/pwned'],
    ['a protocol-relative address', '//evil.example/pwned'],
    ['an absolute address', 'https://evil.example/pwned'],
    ['a dot segment before //', '/.//evil.example/pwned'],
    ['a parent segment before //', '/a/..//evil.example/pwned'],
    ['an encoded dot segment before //', '/%2e//evil.example/pwned'],
  ])('stays on the site for a return_to with %s', async (_label, returnTo) => {
    const { loginUrl } = await freshLoginUrl();
    const context = await browser.newContext({ extraHTTPHeaders: { 'x-forwarded-for': uniqueIp() } });
    const elsewhere: string[] = [];
    await context.route(/evil\.example/, async (route) => {
      elsewhere.push(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'another site' });
    });
    try {
      const page = await context.newPage();
      await page.goto(`${loginUrl}&return_to=${encodeURIComponent(returnTo)}`);
      await page.waitForURL((url) => !url.pathname.endsWith('/inbound-login.html'));
      expect(page.url()).toBe(`${service.issuer}/`);
      expect(elsewhere).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
