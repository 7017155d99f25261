import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { expectAccessible, withRelyingPartyPage } from '../support/page-checks.js';
import { buildAuthorizationRequest, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// The product's brand (BRAND_PRODUCT_NAME) heads every page a person may land on, not only sign-in:
// consent, reset password, the error pages (ours and the engine's), logout and "signed out"; its
// initial in its colour is the pages' icon. In Debian's
// chromium, axe-scanned light and dark; screenshots in test-artifacts/branded-pages/.

const artifacts = path.resolve('test-artifacts/branded-pages');
let service: TestService;
let browser: Browser;
beforeAll(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  [service, browser] = await Promise.all([
    startTestService({ env: { BRAND_PRODUCT_NAME: 'Acme Learning' } }),
    launchChromium(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

const withPage = (run: (page: Page) => Promise<void>, javaScriptEnabled = true) =>
  withRelyingPartyPage(browser, artifacts, run, { javaScriptEnabled });

async function expectBrand(page: Page) {
  await page.getByText('Acme Learning', { exact: true }).first().waitFor();
}

describe('the brand on every page', { timeout: 120_000 }, () => {
  it('reset password, error pages, logout and signed-out show the product name, in English and Russian', async () => {
    await withPage(async (page) => {
      for (const lang of ['en', 'ru']) {
        await page.goto(service.url(`/${lang}/reset-password`));
        await expectBrand(page);
        await expectAccessible(page, artifacts, `reset-${lang}`);

        await page.goto(service.url(`/${lang}/auth?interaction=unknown`));
        await expectBrand(page);
        await expectAccessible(page, artifacts, `error-${lang}`);

        await page.goto(service.url(`/${lang}/auth/single-logout`));
        await expectBrand(page);
        await expectAccessible(page, artifacts, `logout-${lang}`);
      }
      // The engine's own error page and its "signed out" page.
      await page.goto(service.url('/oauth/authorize?client_id=nobody&response_type=code&scope=openid'));
      await expectBrand(page);
      await page.goto(service.url('/oauth/end_session/success?lang=ru'));
      await expectBrand(page);
      expect(await page.getAttribute('html', 'lang')).toBe('ru');
      await expectAccessible(page, artifacts, 'signed-out-ru');
    });
  });

  it('the no-script logout page carries the brand too', async () => {
    await withPage(async (page) => {
      await page.goto(service.url('/ru/auth/single-logout'));
      await expectBrand(page);
    }, false);
  });

  it('consent: the product name heads the page, the heading names the client asking, in English and Russian', async () => {
    const user = await createTestUser(service.service.db);
    const { client } = await createTestClient(service.service.db, { name: 'Demo app' });
    const config = await discover(service.issuer, client.clientId);
    const headings = {
      en: 'Demo app wants to access your Acme Learning account',
      ru: 'Demo app запрашивает доступ к вашей учётной записи Acme Learning',
    };
    for (const lang of ['en', 'ru'] as const) {
      await withPage(async (page) => {
        const request = await buildAuthorizationRequest(config, { ui_locales: lang });
        await page.goto(request.url.toString());
        await page.locator('#identifier').fill(user.email!);
        await page.locator('button[type="submit"]').click();
        await page.locator('#password').fill(user.password);
        await page.locator('button[type="submit"]').click();
        await page.getByRole('heading', { name: headings[lang], exact: true }).waitFor();
        expect(await page.getAttribute('html', 'lang')).toBe(lang);
        // The brand first, as on every page; the client named where it says what it asks.
        expect((await page.locator('main > :first-child').innerText()).trim()).toBe('Acme Learning');
        expect(await page.getByTestId('client-name').innerText()).toBe('Demo app');
        await expectAccessible(page, artifacts, `consent-${lang}`);
      });
    }
  });

  it('the sign-in pages log no errors and every resource loads, the icon too, in English and Russian', async () => {
    // A context of its own: where requests are intercepted (withPage's), chromium asks for no icon.
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
      // The icon's request is the browser's, not the page's: only its console error shows a 404.
      page.on('console', (message) => {
        if (message.type() === 'error')
          problems.push(`console: ${message.text()} (${message.location().url || page.url()})`);
      });
      page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
      page.on('response', (response) => {
        if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
      });
      for (const lang of ['en', 'ru']) {
        await page.goto(service.url(`/${lang}/auth`));
        await expectBrand(page);
        // The browser asks for the icon once the page has loaded.
        await page.waitForLoadState('networkidle');
      }
      expect(problems, problems.join('\n')).toEqual([]);
      const icon = await page.getAttribute('link[rel="icon"]', 'href');
      expect(icon).toBe('/assets/favicon.svg');
      const answer = await page.request.get(service.url(icon!));
      expect(answer.status()).toBe(200);
      expect(answer.headers()['content-type']).toBe('image/svg+xml');
      // The initial of the product's name (Acme Learning), white on the brand's colour.
      expect(await answer.text()).toContain('>A</text>');
    } finally {
      await context.close();
    }
  });
});
