import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { launchChromium } from '../support/browser.js';
import { expectAccessible as scan, withRelyingPartyPage } from '../support/page-checks.js';
import { callbackUri, createTestClient, uniqueEmail } from '../support/fixtures.js';
import {
  buildAuthorizationRequest,
  discover,
  oidc,
  type AuthorizationRequest,
} from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// Onboarding after a registration through /:lang/auth, in Debian's chromium: the name (not skippable),
// a photo (checked by its content), the language, a password for an account without one; then back
// into the authorization: consent, the client, and the `name` and `picture` claims. Each page scanned
// by axe-core in light and dark; screenshots in test-artifacts/onboarding/.

const artifacts = path.resolve('test-artifacts/onboarding');
/** A 1×1 PNG. */
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

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
afterEach(async () => {
  await replaceFunnel(
    service.service.db,
    'registration',
    [
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'otp-code', mandatory: true, order: 20 },
      { stepId: 'password', mandatory: true, order: 30 },
    ],
    new Date(),
  );
  await replaceFunnel(
    service.service.db,
    'login',
    [
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'password', mandatory: true, order: 20 },
    ],
    new Date(),
  );
});

const withPage = (run: (page: Page) => Promise<void>) => withRelyingPartyPage(browser, artifacts, run);

async function client(parameters: Record<string, string> = {}) {
  const { client } = await createTestClient(service.service.db, { name: 'Demo app' });
  const config = await discover(service.issuer, client.clientId);
  const request = await buildAuthorizationRequest(config, { prompt: 'create', ...parameters });
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

const expectAccessible = (page: Page, name: string) => scan(page, artifacts, name);
const press = (page: Page, name: string) => page.getByRole('button', { name, exact: true }).click();
const codeTo = (recipient: string) => service.service.developmentMessages.latestTo(recipient)!.code!;

describe('onboarding after registration, in a real browser', { timeout: 120_000 }, () => {
  it('registers by email code, then name, photo and language, and the client gets name and picture', async () => {
    const email = uniqueEmail('onboarded');
    await withPage(async (page) => {
      const { config, request } = await client();
      await page.goto(request.url.toString());
      await page.getByLabel('Email or phone').fill(email);
      await press(page, 'Continue');
      await page.getByLabel('Code').fill(codeTo(email));
      await press(page, 'Continue');
      await page.getByLabel('Password', { exact: true }).fill('seven purple elephants dancing');
      await press(page, 'Continue');

      // The name: not skippable; an empty last name is refused and tied to its input.
      await page.getByRole('heading', { name: 'What is your name?' }).waitFor();
      await expectAccessible(page, 'name-en');
      expect(await page.getByRole('button', { name: 'Skip' }).count()).toBe(0);
      await page.getByLabel('First name').fill('Ada');
      await page.getByLabel('Last name').fill('   ');
      await page.getByLabel('Last name').evaluate((input) => input.removeAttribute('required'));
      await press(page, 'Continue');
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toBe('Enter your first and last name.');
      expect(await page.getByLabel('Last name').getAttribute('aria-invalid')).toBe('true');
      expect(await page.getByLabel('First name').inputValue()).toBe('Ada');
      await expectAccessible(page, 'name-error-en');
      await page.getByLabel('Last name').fill('Lovelace');
      await press(page, 'Continue');

      // The photo: judged by its content, not its name.
      await page.getByRole('heading', { name: 'Add a photo' }).waitFor();
      await expectAccessible(page, 'avatar-en');
      await page
        .getByLabel('Photo')
        .setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: Buffer.from('not an image') });
      await press(page, 'Save and continue');
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toBe('This file is not a PNG, JPEG or WebP image.');
      expect(await page.getByLabel('Photo').getAttribute('aria-invalid')).toBe('true');
      await expectAccessible(page, 'avatar-error-en');
      const huge = Buffer.concat([png, Buffer.alloc(2 * 1024 * 1024)]);
      await page.getByLabel('Photo').setInputFiles({ name: 'big.png', mimeType: 'image/png', buffer: huge });
      await press(page, 'Save and continue');
      await page.getByText('The image is larger than 2 MB. Choose a smaller one.').waitFor();
      // Far larger: refused before the body is read, with the same words.
      const enormous = Buffer.concat([png, Buffer.alloc(9 * 1024 * 1024)]);
      await page
        .getByLabel('Photo')
        .setInputFiles({ name: 'poster.png', mimeType: 'image/png', buffer: enormous });
      await Promise.all([page.waitForNavigation(), press(page, 'Save and continue')]);
      await page.getByText('The image is larger than 2 MB. Choose a smaller one.').waitFor();
      await page.getByLabel('Photo').setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: png });
      await press(page, 'Save and continue');

      // The language: Russian from here on, consent included (the user's saved language).
      await page.getByRole('heading', { name: 'Your language' }).waitFor();
      await expectAccessible(page, 'language-en');
      await page.getByLabel('Русский').check();
      await press(page, 'Save and continue');

      // The account has a password already: no password step; on to consent, in Russian.
      await page
        .getByRole('heading', { name: 'Demo app запрашивает доступ к вашей учётной записи' })
        .waitFor();
      expect(await page.getAttribute('html', 'lang')).toBe('ru');
      await press(page, 'Разрешить');
      const tokens = await redeem(config, request, page);
      const claims = tokens.claims()!;
      expect(claims).toMatchObject({
        email,
        name: 'Ada Lovelace',
        given_name: 'Ada',
        family_name: 'Lovelace',
      });
      const picture = String(claims.picture);
      expect(picture.startsWith(`${service.issuer}/avatars/`)).toBe(true);
      const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      expect(userinfo).toMatchObject({ name: 'Ada Lovelace', picture });

      // The picture is served by the service, as uploaded.
      const image = await fetch(picture);
      expect(image.status).toBe(200);
      expect(image.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await image.arrayBuffer()).equals(png)).toBe(true);
      const user = await service.service.db('users').where({ email }).first();
      expect(user.language).toBe('ru');
    });
  });

  it('in Russian: an account registered by code alone sets a password at the last step', async () => {
    const codeOnly = [
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'otp-code', mandatory: true, order: 20 },
    ];
    await replaceFunnel(service.service.db, 'registration', codeOnly, new Date());
    await replaceFunnel(service.service.db, 'login', codeOnly, new Date());
    const email = uniqueEmail('codeonly');
    await withPage(async (page) => {
      const { config, request } = await client({ ui_locales: 'ru' });
      await page.goto(request.url.toString());
      await page.getByLabel('Электронная почта или телефон').fill(email);
      await press(page, 'Продолжить');
      await page.getByLabel('Код').fill(codeTo(email));
      await press(page, 'Продолжить');

      await page.getByRole('heading', { name: 'Как вас зовут?' }).waitFor();
      expect(await page.getAttribute('html', 'lang')).toBe('ru');
      await expectAccessible(page, 'name-ru');
      await page.getByLabel('Имя', { exact: true }).fill('Иван');
      await page.getByLabel('Фамилия').fill('Петров');
      await press(page, 'Продолжить');

      await page.getByRole('heading', { name: 'Добавьте фотографию' }).waitFor();
      await expectAccessible(page, 'avatar-ru');
      await press(page, 'Пропустить');
      await page.getByRole('heading', { name: 'Ваш язык' }).waitFor();
      await expectAccessible(page, 'language-ru');
      await press(page, 'Пропустить');

      await page.getByRole('heading', { name: 'Задайте пароль' }).waitFor();
      await expectAccessible(page, 'password-ru');
      await page.getByLabel('Новый пароль', { exact: true }).fill('четыре тихие реки подо льдом');
      await page.getByLabel('Повторите новый пароль').fill('четыре тихие реки подо льдом');
      await press(page, 'Сохранить и продолжить');

      await press(page, 'Разрешить');
      const tokens = await redeem(config, request, page);
      const claims = tokens.claims()!;
      expect(claims).toMatchObject({ name: 'Иван Петров', given_name: 'Иван', family_name: 'Петров' });
      expect(claims).not.toHaveProperty('picture');
      expect(await findPasswordHash(service.service.db, claims.sub)).toBeDefined();
    });
  });

  it('a registration on the service itself (no application) ends onboarded and signed in', async () => {
    const email = uniqueEmail('direct');
    await withPage(async (page) => {
      await page.goto(service.url('/en/auth?register=1'));
      await page.getByLabel('Email or phone').fill(email);
      await press(page, 'Continue');
      await page.getByLabel('Code').fill(codeTo(email));
      await press(page, 'Continue');
      await page.getByLabel('Password', { exact: true }).fill('seven purple elephants dancing');
      await press(page, 'Continue');
      await page.getByLabel('First name').fill('Grace');
      await page.getByLabel('Last name').fill('Hopper');
      await press(page, 'Continue');
      await press(page, 'Skip');
      await press(page, 'Skip');
      await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
      await page.getByText('Grace Hopper', { exact: false }).waitFor();
      // Onboarding is over: its pages are gone.
      await page.goto(service.url('/en/auth/onboarding'));
      await page.getByText('This page has expired.', { exact: false }).waitFor();
    });
  });

  it('a name carrying the NUL character is refused with 400, and nothing is saved', async () => {
    const email = uniqueEmail('nul-name');
    await withPage(async (page) => {
      const { request } = await client();
      await page.goto(request.url.toString());
      await page.getByLabel('Email or phone').fill(email);
      await press(page, 'Continue');
      await page.getByLabel('Code').fill(codeTo(email));
      await press(page, 'Continue');
      await page.getByLabel('Password', { exact: true }).fill('seven purple elephants dancing');
      await press(page, 'Continue');
      await page.getByRole('heading', { name: 'What is your name?' }).waitFor();
      await page.getByLabel('First name').fill('Ada');
      // No keyboard types it; a script can, and the form sends it as %00.
      await page
        .getByLabel('Last name')
        .evaluate((input) => ((input as { value: string }).value = 'Love\u0000lace'));
      const answer = page.waitForResponse((response) => response.request().method() === 'POST');
      await press(page, 'Continue');
      expect((await answer).status()).toBe(400);
      await page.getByText('Error code: invalid_request').waitFor();
      const user = await service.service.db('users').where({ email }).first();
      expect([user.given_name, user.family_name]).toEqual([null, null]);
    });
  });

  it('the onboarding pages without a registration behind them say so, with a way back', async () => {
    await withPage(async (page) => {
      await page.goto(service.url('/en/auth/onboarding'));
      await page
        .getByText('This page has expired. Sign in again to finish setting up your account.')
        .waitFor();
      await page.getByRole('link', { name: 'Start again' }).waitFor();
    });
  });
});
