import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { expectAccessible } from '../support/page-checks.js';
import { startTestService, type TestService } from '../support/test-service.js';

// The SSO landing pages, /inbound-login.html and /qr-approve.html, in the person's language (?lang=,
// else the browser's) with the language switch; axe-scanned light and dark, screenshots in
// test-artifacts/sso-pages/. Their full flows are in inbound-login and qr-login tests.

const artifacts = path.resolve('test-artifacts/sso-pages');
let service: TestService;
let browser: Browser;
beforeAll(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  [service, browser] = await Promise.all([startTestService(), launchChromium()]);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

describe('SSO pages in Russian and English', { timeout: 120_000 }, () => {
  it('/inbound-login.html speaks the browser language and switches', async () => {
    const context = await browser.newContext({ locale: 'ru-RU' });
    const page = await context.newPage();
    try {
      await page.goto(service.url('/inbound-login.html'));
      expect(await page.getAttribute('html', 'lang')).toBe('ru');
      await page.getByRole('heading', { name: 'Эта ссылка для входа не работает' }).waitFor();
      await page.getByText('В ссылке нет ключа для входа.').waitFor();
      await page.getByRole('link', { name: 'Войти' }).waitFor();
      await expectAccessible(page, artifacts, 'inbound-login-ru');

      await page.getByRole('link', { name: 'English' }).click();
      expect(await page.getAttribute('html', 'lang')).toBe('en');
      await page.getByRole('heading', { name: 'This sign-in link does not work' }).waitFor();
      await page.getByText('The link has no sign-in token.').waitFor();
      await expectAccessible(page, artifacts, 'inbound-login-en');
    } finally {
      await context.close();
    }
  });

  it('/qr-approve.html speaks Russian from ?lang=ru and switches', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(service.url('/qr-approve.html?lang=ru'));
      expect(await page.getAttribute('html', 'lang')).toBe('ru');
      await page.getByRole('heading', { name: 'Этот код нельзя подтвердить' }).waitFor();
      await page.getByText('В ссылке нет кода.').waitFor();
      await expectAccessible(page, artifacts, 'qr-approve-ru');

      await page.getByRole('link', { name: 'English' }).click();
      await page.getByRole('heading', { name: "This code can't be approved" }).waitFor();
      expect(await page.getAttribute('html', 'lang')).toBe('en');
      await expectAccessible(page, artifacts, 'qr-approve-en');

      // With a code in the fragment, the language links keep it (the address itself drops it).
      await page.goto(service.url('/qr-approve.html?lang=en#token=qr-code-123'));
      expect(new URL(page.url()).hash).toBe('');
      const russian = await page.getByRole('link', { name: 'Русский' }).getAttribute('href');
      expect(russian).toMatch(/#token=qr-code-123$/);
    } finally {
      await context.close();
    }
  });
});
