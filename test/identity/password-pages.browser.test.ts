import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { requestFrom } from '../../src/http/request-info.js';
import { launchChromium } from '../support/browser.js';
import { callbackUri, createTestClient, createTestUser, uniqueEmail } from '../support/fixtures.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { ManualClock } from '../support/manual-clock.js';
import { buildAuthorizationRequest, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
let browser: Browser;
const clock = new ManualClock();
beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService({ clock }), launchChromium()]);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

async function withPage<T>(run: (page: Page) => Promise<T>): Promise<T> {
  const context = await browser.newContext();
  try {
    return await run(await context.newPage());
  } finally {
    await context.close();
  }
}

async function loginStatus(identifier: string, password: string): Promise<number> {
  const request = requestFrom(uniqueIp(), 'test');
  const { flows } = service.service;
  try {
    const started = await flows.start('login', request);
    const identified = await flows.submit(started.session.id, 'phone-email', { identifier }, request);
    if (identified.status !== 'in_progress') throw new Error('expected the password step');
    await flows.submit(identified.session.id, 'password', { password }, request);
    return 200;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

const newPassword = 'seven purple elephants dancing';

describe('the reset-password page (/:lang/reset-password) in a real browser', () => {
  it('walks through identifier → code → new password, then the new password signs in', async () => {
    const user = await createTestUser(service.service.db);
    await withPage(async (page) => {
      await page.goto(service.url('/en/reset-password'));
      expect(await page.title()).toBe('Reset your password');
      expect(await page.getAttribute('html', 'lang')).toBe('en');
      await page.fill('#identifier', user.email!);
      await page.click('button[type="submit"]');

      await page.waitForSelector('[data-testid="code-form"]');
      expect(await page.textContent('[data-testid="notice"]')).toContain(user.email!);
      const code = service.service.developmentMessages.latestTo(user.email!)!.code!;
      await page.fill('#code', code === '000000' ? '111111' : '000000');
      await page.click('button[type="submit"]');
      expect(await page.textContent('[data-testid="form-error"]')).toBe(
        'This code is not right. 4 attempts left.',
      );
      await page.fill('#code', code);
      await page.click('button[type="submit"]');

      await page.waitForSelector('[data-testid="password-form"]');
      await page.fill('#password', 'password123');
      await page.fill('#passwordConfirmation', 'password123');
      await page.click('button[type="submit"]');
      expect(await page.textContent('[data-testid="form-error"]')).toContain('too common');
      await page.fill('#password', newPassword);
      await page.fill('#passwordConfirmation', newPassword);
      await page.click('button[type="submit"]');
      await page.waitForSelector('[data-testid="done"]');
    });
    expect(await loginStatus(user.email!, newPassword)).toBe(200);
    expect(await loginStatus(user.email!, user.password)).toBe(401);
  });

  it('opens the link of the message straight at the new-password form (a language we lack: English)', async () => {
    const user = await createTestUser(service.service.db);
    await withPage(async (page) => {
      await page.goto(service.url('/de/reset-password'));
      await page.fill('#identifier', user.email!);
      await page.click('button[type="submit"]');
      await page.waitForSelector('[data-testid="code-form"]');

      const link = service.service.developmentMessages.latestTo(user.email!)!.link!;
      // /de/ is not a language of ours: the page and its link are English, and say so.
      expect(link.startsWith(service.url('/en/reset-password?'))).toBe(true);
      await page.goto(link);
      await page.waitForSelector('[data-testid="password-form"]');
      expect(await page.getAttribute('html', 'lang')).toBe('en');
      await page.fill('#password', newPassword);
      await page.fill('#passwordConfirmation', 'not the same at all');
      await page.click('button[type="submit"]');
      expect(await page.textContent('[data-testid="form-error"]')).toBe(
        'The new password and its confirmation are not the same.',
      );
      await page.fill('#password', newPassword);
      await page.fill('#passwordConfirmation', newPassword);
      await page.click('button[type="submit"]');
      await page.waitForSelector('[data-testid="done"]');

      // The link is single-use.
      await page.goto(link);
      await page.fill('#password', 'another fine passphrase');
      await page.fill('#passwordConfirmation', 'another fine passphrase');
      await page.click('button[type="submit"]');
      await page.waitForSelector('[data-testid="request-form"]');
      expect(await page.textContent('[data-testid="form-error"]')).toBe(
        'This code is no longer valid. Ask for a new one.',
      );
    });
    expect(await loginStatus(user.email!, newPassword)).toBe(200);
  });

  it('shows the same page for an address no account has', async () => {
    await withPage(async (page) => {
      await page.goto(service.url('/en/reset-password'));
      const nobody = uniqueEmail('nobody');
      await page.fill('#identifier', nobody);
      await page.click('button[type="submit"]');
      await page.waitForSelector('[data-testid="code-form"]');
      expect(await page.textContent('[data-testid="notice"]')).toContain(nobody);
    });
  });
});

describe('a brute-force lockout on the OIDC login page', () => {
  it('shows the wait with a countdown, and lets the user in once it is over', async () => {
    const user = await createTestUser(service.service.db);
    const { client } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    const { url } = await buildAuthorizationRequest(config);
    await withPage(async (page) => {
      await page.clock.install();
      await page.goto(url.toString());
      await page.fill('#identifier', user.email!);
      await page.click('button[type="submit"]');
      for (let attempt = 0; attempt < 5; attempt++) {
        await page.fill('#password', 'not my password');
        await page.click('button[type="submit"]');
        expect(await page.textContent('[data-testid="form-error"]')).toBe(
          'The email, phone or password is not right.',
        );
      }
      await page.fill('#password', user.password);
      const [response] = await Promise.all([
        page.waitForResponse(
          (answer) => answer.request().method() === 'POST' && answer.url().endsWith('/step'),
        ),
        page.click('button[type="submit"]'),
      ]);
      expect(response.status()).toBe(429);
      expect(response.headers()['retry-after']).toBe('30');
      const lockout = page.locator('[data-testid="lockout"]');
      await expect
        .poll(() => lockout.textContent())
        .toBe('Too many failed sign-in attempts. Try again in 30 seconds.');
      expect(await page.isDisabled('button[type="submit"]')).toBe(true);

      await page.clock.runFor(10_000);
      expect(await lockout.textContent()).toBe('Too many failed sign-in attempts. Try again in 20 seconds.');
      await page.clock.runFor(20_000);
      expect(await lockout.textContent()).toBe('You can try again now.');
      expect(await page.isDisabled('button[type="submit"]')).toBe(false);

      // The service's 30 seconds pass too: the right password now signs in.
      clock.advanceSeconds(30);
      await page.route(`${callbackUri}**`, (route) => route.fulfill({ body: 'the application' }));
      await page.fill('#password', user.password);
      await page.click('button[type="submit"]');
      await page.waitForSelector('button[value="allow"]');
      await page.click('button[value="allow"]');
      await page.waitForURL(`${callbackUri}**`);
      expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    });
  });
});
