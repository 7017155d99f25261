import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { launchChromium } from '../support/browser.js';
import { callbackUri, createTestClient, createTestUser, uniqueEmail } from '../support/fixtures.js';
import { expectAccessible, withRelyingPartyPage } from '../support/page-checks.js';
import {
  buildAuthorizationRequest,
  discover,
  oidc,
  type AuthorizationRequest,
} from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { MovableClock } from './support/identity-client.js';
import { totpCode } from './support/totp-codes.js';

// Steps of /:lang/auth in Debian's chromium: TOTP (forced setup, then sign-in), the lockout countdown
// in Russian with its plural forms, a Russian phone number as people type it. axe-scanned, light and
// dark; screenshots in test-artifacts/sign-in-steps/.

const artifacts = path.resolve('test-artifacts/sign-in-steps');
const clock = new MovableClock();
const passwordLogin = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

let service: TestService;
let browser: Browser;
beforeAll(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  [service, browser] = await Promise.all([startTestService({ clock }), launchChromium()]);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});
afterEach(() => replaceFunnel(service.service.db, 'login', passwordLogin, new Date()));

const withPage = (run: (page: Page) => Promise<void>) => withRelyingPartyPage(browser, artifacts, run);
const press = (page: Page, name: string) => page.getByRole('button', { name, exact: true }).click();

async function client(parameters: Record<string, string> = {}) {
  const { client } = await createTestClient(service.service.db, { name: 'Demo app' });
  const config = await discover(service.issuer, client.clientId);
  const request = await buildAuthorizationRequest(config, parameters);
  return { config, request };
}

async function redeem(config: oidc.Configuration, request: AuthorizationRequest, page: Page) {
  await page.waitForURL(`${callbackUri}?**`);
  return oidc.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: request.codeVerifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
}

describe('sign-in steps in a real browser', { timeout: 120_000 }, () => {
  it('TOTP: a mandatory step is set up after the password, then asked at the next sign-in', async () => {
    await replaceFunnel(
      service.service.db,
      'login',
      [...passwordLogin, { stepId: 'totp', mandatory: true, order: 30 }],
      new Date(),
    );
    const user = await createTestUser(service.service.db);
    let secret = '';
    await withPage(async (page) => {
      const { config, request } = await client();
      await page.goto(request.url.toString());
      await page.getByLabel('Email or phone').fill(user.email!);
      await press(page, 'Continue');
      await page.getByLabel('Password', { exact: true }).fill(user.password);
      await press(page, 'Sign in');

      // Forced setup: the key to type into an authenticator app, then its code.
      secret = (await page.getByTestId('totp-secret').textContent())!;
      await expectAccessible(page, artifacts, 'totp-setup-en');
      await page.getByLabel('Code').fill('000000');
      await press(page, 'Continue');
      await page.getByRole('alert').waitFor();
      expect(await page.getByLabel('Code').getAttribute('aria-invalid')).toBe('true');
      await page.getByLabel('Code').fill(await totpCode(secret, clock.now()));
      await press(page, 'Continue');
      await press(page, 'Allow');
      await redeem(config, request, page);
    });

    clock.advance(30_000);
    await withPage(async (page) => {
      const { config, request } = await client();
      await page.goto(request.url.toString());
      await page.getByLabel('Email or phone').fill(user.email!);
      await press(page, 'Continue');
      await page.getByLabel('Password', { exact: true }).fill(user.password);
      await press(page, 'Sign in');
      await expectAccessible(page, artifacts, 'totp-en');
      await page.getByLabel('Code').fill(await totpCode(secret, clock.now()));
      await press(page, 'Continue');
      await press(page, 'Allow');
      const tokens = await redeem(config, request, page);
      expect(tokens.claims()!.sub).toBe(user.id);
    });
  });

  it('the lockout countdown speaks Russian with the right plural forms and frees the button at the end', async () => {
    const user = await createTestUser(service.service.db);
    await withPage(async (page) => {
      await page.clock.install();
      const { request } = await client({ ui_locales: 'ru' });
      await page.goto(request.url.toString());
      await page.getByLabel('Электронная почта или телефон').fill(user.email!);
      await press(page, 'Продолжить');
      // Five wrong passwords in a row lock this account from this browser for 30 seconds.
      for (let attempt = 0; attempt < 6; attempt += 1) {
        await page.getByLabel('Пароль', { exact: true }).fill('not the password');
        await Promise.all([page.waitForNavigation(), press(page, 'Войти')]);
        if ((await page.getByTestId('lockout').count()) > 0) break;
      }
      const lockout = page.getByRole('alert');
      // 30 seconds, or a little less on a busy machine (the wait runs from the failure, on the server).
      const start = Number(await lockout.getAttribute('data-retry-after'));
      expect(start).toBeGreaterThanOrEqual(25);
      expect(start).toBeLessThanOrEqual(30);
      expect(await lockout.textContent()).toMatch(
        /^Слишком много неудачных попыток входа\. Попробуйте снова через \d+ секунд\.$/,
      );
      await expectAccessible(page, artifacts, 'lockout-ru');
      const signIn = page.getByRole('button', { name: 'Войти', exact: true });
      expect(await signIn.isDisabled()).toBe(true);
      // Second by second to the end: every number with its CLDR plural form (21 секунду, 24 секунды,
      // 25 секунд), all three forms met on the way.
      const forms: Partial<Record<Intl.LDMLPluralRule, string>> = {
        one: 'секунду',
        few: 'секунды',
        many: 'секунд',
      };
      const rules = new Intl.PluralRules('ru');
      const seen = new Set<string>();
      for (let step = 0; step < 40; step += 1) {
        const text = (await lockout.textContent())!;
        if (text === 'Можно попробовать снова.') break;
        const [, count, word] = /через (\d+) (\S+)\.$/.exec(text) ?? [];
        expect(word, text).toBe(forms[rules.select(Number(count))]);
        seen.add(word!);
        await page.clock.runFor(1000);
      }
      expect([...seen].sort()).toEqual(['секунд', 'секунду', 'секунды']);
      expect(await lockout.textContent()).toBe('Можно попробовать снова.');
      expect(await signIn.isDisabled()).toBe(false);
    });
  });

  it('registers in Russian with a phone typed as people do (8 916 123-45-67); a wrong code says how many tries are left', async () => {
    const digits = String(crypto.randomInt(1_000_000, 9_999_999));
    const typed = `8 916 ${digits.slice(0, 3)}-${digits.slice(3, 5)}-${digits.slice(5)}`;
    const phone = `+7916${digits}`;
    await withPage(async (page) => {
      const { config, request } = await client({ prompt: 'create', ui_locales: 'ru', scope: 'openid phone' });
      await page.goto(request.url.toString());
      await page.getByRole('heading', { name: 'Регистрация' }).waitFor();
      await page.getByLabel('Электронная почта или телефон').fill(typed);
      await press(page, 'Продолжить');

      await page.getByLabel('Код').fill('000000');
      await press(page, 'Продолжить');
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toBe('Неверный код. Осталось 4 попытки.');
      await expectAccessible(page, artifacts, 'code-error-ru');
      const code = service.service.developmentMessages.latestTo(phone)!.code!;
      await page.getByLabel('Код').fill(code);
      await press(page, 'Продолжить');
      await page.getByLabel('Пароль', { exact: true }).fill('семь фиолетовых слонов танцуют');
      await press(page, 'Продолжить');

      await page.getByLabel('Имя', { exact: true }).fill('Анна');
      await page.getByLabel('Фамилия').fill('Иванова');
      await press(page, 'Продолжить');
      await press(page, 'Пропустить');
      await press(page, 'Пропустить');
      await press(page, 'Разрешить');
      const tokens = await redeem(config, request, page);
      expect(tokens.claims()).toMatchObject({ phone_number: phone, phone_number_verified: true });
    });

    // Signing in later, typed the same way, finds the same account.
    await withPage(async (page) => {
      const { request } = await client({ ui_locales: 'ru' });
      await page.goto(request.url.toString());
      await page.getByLabel('Электронная почта или телефон').fill(typed);
      await press(page, 'Продолжить');
      await page.getByRole('heading', { name: 'Введите пароль' }).waitFor();
      expect(await page.getByTestId('identifier').textContent()).toBe(phone);
    });
  });

  it('password steps name the account for password managers: the identifier, autocomplete=username', async () => {
    const user = await createTestUser(service.service.db);
    const email = uniqueEmail('register');
    // The form with the password: its account field's value, its password fields' autocomplete.
    const passwordForm = (page: Page) =>
      page.locator('form:has(input[type="password"])').evaluate((form) => ({
        username: [...form.querySelectorAll('input[autocomplete="username"]')].map(
          (input) => (input as unknown as { value: string }).value,
        ),
        passwords: [...form.querySelectorAll('input[type="password"]')].map((input) =>
          input.getAttribute('autocomplete'),
        ),
      }));
    await withPage(async (page) => {
      // Chromium's own complaint about a password form without one (a verbose console message).
      const complaints: string[] = [];
      page.on('console', (message) => {
        if (message.text().includes('username field')) complaints.push(`${page.url()}: ${message.text()}`);
      });

      const signIn = await client();
      await page.goto(signIn.request.url.toString());
      await page.getByLabel('Email or phone').fill(user.email!);
      await press(page, 'Continue');
      await page.getByRole('heading', { name: 'Enter your password' }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await passwordForm(page)).toEqual({ username: [user.email], passwords: ['current-password'] });

      const registration = await client({ prompt: 'create' });
      await page.goto(registration.request.url.toString());
      await page.getByLabel('Email or phone').fill(email);
      await press(page, 'Continue');
      await page.getByLabel('Code').fill(service.service.developmentMessages.latestTo(email)!.code!);
      await press(page, 'Continue');
      await page.getByRole('heading', { name: 'Choose a password' }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await passwordForm(page)).toEqual({ username: [email], passwords: ['new-password'] });
      expect(complaints).toEqual([]);
    });
  });
});
