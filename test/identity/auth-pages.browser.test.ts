import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { expectAccessible, withRelyingPartyPage } from '../support/page-checks.js';
import { callbackUri, createTestClient, createTestUser, uniqueEmail } from '../support/fixtures.js';
import {
  buildAuthorizationRequest,
  discover,
  oidc,
  type AuthorizationRequest,
} from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// The pages people use, in Debian's chromium: /:lang/auth (sign-in, registration, saved accounts),
// consent, reset-password detour, logout with and without script, in English and Russian, each
// page scanned by axe-core (WCAG 2.1 A/AA + best practice) in light and dark colour schemes.
// Screenshots go to test-artifacts/ (not committed).

const artifacts = path.resolve('test-artifacts/auth-pages');
const signedOutUri = 'http://localhost:8080/signed-out';

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

/** A page of a fresh context where the relying party answers (test/support/page-checks.ts). */
const withContext = <T>(
  run: (context: BrowserContext, page: Page) => Promise<T>,
  options: { javaScriptEnabled?: boolean; locale?: string } = {},
): Promise<T> => withRelyingPartyPage(browser, artifacts, (page, context) => run(context, page), options);

async function client(parameters: Record<string, string> = {}) {
  const { client } = await createTestClient(service.service.db, {
    name: 'Demo app',
    postLogoutRedirectUris: [signedOutUri],
  });
  const config = await discover(service.issuer, client.clientId);
  const request = await buildAuthorizationRequest(config, parameters);
  return { client, config, request };
}

async function redeem(config: oidc.Configuration, request: AuthorizationRequest, page: Page) {
  await page.waitForURL(`${callbackUri}?**`);
  return oidc.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: request.codeVerifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
}

const submit = (page: Page, name: string | RegExp) => page.getByRole('button', { name, exact: true }).click();

describe('/:lang/auth in a real browser', { timeout: 120_000 }, () => {
  it('registers through prompt=create (email, code, password), consents and returns to the client; then signs in from the saved account', async () => {
    const email = uniqueEmail('newcomer');
    const password = 'seven purple elephants dancing';
    await withContext(async (context, page) => {
      const { config, request } = await client({ prompt: 'create' });
      await page.goto(request.url.toString());
      expect(new URL(page.url()).pathname).toBe('/en/auth');
      await page.getByRole('heading', { name: 'Create an account' }).waitFor();
      await expectAccessible(page, artifacts, 'register-identifier-en');
      await page.getByLabel('Email or phone').fill(email);
      await submit(page, 'Continue');

      await page.getByRole('heading', { name: 'Confirm your email or phone' }).waitFor();
      const code = service.service.developmentMessages.latestTo(email)!.code!;
      await expectAccessible(page, artifacts, 'register-code-en');
      await page.getByLabel('Code').fill(code);
      await submit(page, 'Continue');

      await page.getByRole('heading', { name: 'Choose a password' }).waitFor();
      await page.getByLabel('Password', { exact: true }).fill(password);
      await submit(page, 'Continue');

      // Onboarding (onboarding.browser.test.ts has the rest): the name, then the optional steps skipped.
      await page.getByRole('heading', { name: 'What is your name?' }).waitFor();
      await page.getByLabel('First name').fill('Grace');
      await page.getByLabel('Last name').fill('Hopper');
      await submit(page, 'Continue');
      await submit(page, 'Skip');
      await submit(page, 'Skip');

      await page.getByRole('heading', { name: 'Demo app wants to access your Identity account' }).waitFor();
      await expectAccessible(page, artifacts, 'consent-en');
      await submit(page, 'Allow');
      const tokens = await redeem(config, request, page);
      expect(tokens.claims()).toMatchObject({ email, name: 'Grace Hopper' });

      // A later sign-in on this device: the provider session is gone, the saved account is listed.
      await context.clearCookies({ name: '_session' });
      await context.clearCookies({ name: '_session.sig' });
      const again = await client();
      await page.goto(again.request.url.toString());
      const saved = page.getByRole('link', { name: `Continue as Grace Hopper ${email}` });
      await saved.waitFor();
      await expectAccessible(page, artifacts, 'saved-accounts-en');
      await saved.click();
      await page.getByRole('heading', { name: 'Enter your password' }).waitFor();
      expect(await page.getByTestId('identifier').textContent()).toBe(email);
      await page.getByLabel('Password', { exact: true }).fill(password);
      await submit(page, 'Sign in');
      await submit(page, 'Allow');
      await redeem(again.config, again.request, page);
    });
  });

  it('speaks Russian from ui_locales: labels, errors with plural forms, consent, and switches language keeping the sign-in', async () => {
    const user = await createTestUser(service.service.db);
    await withContext(async (_context, page) => {
      const { config, request } = await client({ ui_locales: 'ru' });
      await page.goto(request.url.toString());
      expect(new URL(page.url()).pathname).toBe('/ru/auth');
      expect(await page.getAttribute('html', 'lang')).toBe('ru');
      await page.getByRole('heading', { name: 'Вход' }).waitFor();
      await expectAccessible(page, artifacts, 'identifier-ru');

      // The language switch: the same sign-in, in English, and back.
      await page.getByRole('link', { name: 'English' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(await page.getAttribute('html', 'lang')).toBe('en');
      await page.getByRole('link', { name: 'Русский' }).click();
      await page.getByRole('heading', { name: 'Вход' }).waitFor();

      await page.getByLabel('Электронная почта или телефон').fill(user.email!);
      await submit(page, 'Продолжить');
      await page.getByRole('heading', { name: 'Введите пароль' }).waitFor();
      await page.getByLabel('Пароль', { exact: true }).fill('not the password');
      await submit(page, 'Войти');
      const error = page.getByRole('alert');
      await error.waitFor();
      expect(await error.textContent()).toBe('Неверная почта, телефон или пароль.');
      expect(await page.getByLabel('Пароль', { exact: true }).getAttribute('aria-invalid')).toBe('true');
      await expectAccessible(page, artifacts, 'password-error-ru');

      await page.getByLabel('Пароль', { exact: true }).fill(user.password);
      await submit(page, 'Войти');
      await page
        .getByRole('heading', { name: 'Demo app запрашивает доступ к вашей учётной записи' })
        .waitFor();
      expect(await page.getByText('Ваш адрес электронной почты').count()).toBe(1);
      await expectAccessible(page, artifacts, 'consent-ru');
      await submit(page, 'Разрешить');
      await redeem(config, request, page);
    });
  });

  it('Forgot password? carries the identifier and comes back into the interrupted sign-in', async () => {
    const user = await createTestUser(service.service.db);
    const newPassword = 'four quiet rivers under snow';
    await withContext(async (_context, page) => {
      const { config, request } = await client();
      await page.goto(request.url.toString());
      await page.getByLabel('Email or phone').fill(user.email!);
      await submit(page, 'Continue');
      await expectAccessible(page, artifacts, 'password-en');
      await page.getByRole('link', { name: 'Forgot password?' }).click();

      await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
      expect(await page.getByLabel('Email or phone').inputValue()).toBe(user.email);
      await expectAccessible(page, artifacts, 'reset-request-en');
      await submit(page, 'Send the code');
      await page.getByLabel('Code').waitFor();
      const code = service.service.developmentMessages.latestTo(user.email!)!.code!;
      await page.getByLabel('Code').fill(code);
      await submit(page, 'Continue');
      await page.getByLabel('New password', { exact: true }).fill(newPassword);
      await page.getByLabel('Repeat the new password').fill(newPassword);
      await expectAccessible(page, artifacts, 'reset-password-en');
      await submit(page, 'Set the new password');
      await page.getByRole('heading', { name: 'Password changed' }).waitFor();
      await expectAccessible(page, artifacts, 'reset-done-en');
      await page.getByRole('link', { name: 'Continue signing in' }).click();

      await page.getByLabel('Email or phone').fill(user.email!);
      await submit(page, 'Continue');
      await page.getByLabel('Password', { exact: true }).fill(newPassword);
      await submit(page, 'Sign in');
      await submit(page, 'Allow');
      await redeem(config, request, page);
    });
  });

  it('the back button after a finished sign-in returns to the application, not to an expired page', async () => {
    // A real application server: a history navigation is not intercepted by the browser context's routes.
    const application = http.createServer((_request, response) => {
      response.setHeader('content-type', 'text/html');
      response.end('<!doctype html><html lang="en"><title>app</title><h1>the application</h1></html>');
    });
    await new Promise<void>((resolve) => application.listen(0, '127.0.0.1', resolve));
    const home = `http://127.0.0.1:${(application.address() as AddressInfo).port}/`;
    try {
      const user = await createTestUser(service.service.db);
      const { client: registered } = await createTestClient(service.service.db, {
        name: 'Demo app',
        redirectUris: [`${home}callback`],
      });
      const config = await discover(service.issuer, registered.clientId);
      const request = await buildAuthorizationRequest(config, { redirect_uri: `${home}callback` });
      await withContext(async (_context, page) => {
        await page.goto(request.url.toString());
        await page.getByLabel('Email or phone').fill(user.email!);
        await submit(page, 'Continue');
        await page.getByLabel('Password', { exact: true }).fill(user.password);
        await submit(page, 'Sign in');
        await submit(page, 'Allow');
        await page.waitForURL(`${home}callback?**`);

        await page.goBack();
        await page.waitForURL(home);
        await page.getByRole('heading', { name: 'the application' }).waitFor();
      });
    } finally {
      application.close();
    }
  });

  it('deny on consent sends the person back with access_denied', async () => {
    const user = await createTestUser(service.service.db);
    await withContext(async (_context, page) => {
      const { request } = await client();
      await page.goto(request.url.toString());
      await page.getByLabel('Email or phone').fill(user.email!);
      await submit(page, 'Continue');
      await page.getByLabel('Password', { exact: true }).fill(user.password);
      await submit(page, 'Sign in');
      await submit(page, 'Deny');
      await page.waitForURL(`${callbackUri}?**`);
      expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
    });
  });

  it('signs out without JavaScript: the no-script button finishes the logout, the identity session too', async () => {
    const user = await createTestUser(service.service.db);
    await withContext(
      async (context, page) => {
        // Signed in to the service itself first: a main-auth session and its refresh cookie.
        await page.goto(service.url('/en/auth'));
        await page.getByLabel('Email or phone').fill(user.email!);
        await submit(page, 'Continue');
        await page.getByLabel('Password', { exact: true }).fill(user.password);
        await submit(page, 'Sign in');
        await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
        const liveSessions = () =>
          service.service.db('sessions').where({ user_id: user.id, is_revoked: false }).count('* as n');
        expect(Number((await liveSessions())[0]!.n)).toBe(1);
        const refreshCookie = async () =>
          (await context.cookies()).filter((cookie) => cookie.name === 'service_id_refresh_token');
        expect(await refreshCookie()).not.toHaveLength(0);

        const { config, request } = await client();
        await page.goto(request.url.toString());
        await page.getByLabel('Email or phone').fill(user.email!);
        await submit(page, 'Continue');
        await page.getByLabel('Password', { exact: true }).fill(user.password);
        await submit(page, 'Sign in');
        await submit(page, 'Allow');
        const tokens = await redeem(config, request, page);

        const logout = oidc.buildEndSessionUrl(config, {
          id_token_hint: tokens.id_token!,
          post_logout_redirect_uri: signedOutUri,
        });
        await page.goto(logout.toString());
        await page.getByRole('heading', { name: 'Sign out?' }).waitFor();
        await page.screenshot({ path: path.join(artifacts, 'logout-noscript-en.png') });
        await submit(page, 'Sign out');
        await page.waitForURL(`${signedOutUri}**`);

        // The provider's session is over: the next authorize asks for a login again.
        const again = await client();
        await page.goto(again.request.url.toString());
        await page.getByLabel('Email or phone').waitFor();
        // And the identity session of this browser with it.
        expect(Number((await liveSessions())[0]!.n)).toBe(0);
        expect(await refreshCookie()).toHaveLength(0);
      },
      { javaScriptEnabled: false },
    );
  });

  it('error pages speak plainly, in the language asked, with a way back', async () => {
    await withContext(async (_context, page) => {
      await page.goto(service.url('/ru/auth?interaction=unknown'));
      expect(await page.getAttribute('html', 'lang')).toBe('ru');
      await page.getByRole('heading', { name: 'Не удалось продолжить' }).waitFor();
      expect(await page.getByTestId('error-description').textContent()).toContain('устарела');
      await expectAccessible(page, artifacts, 'error-ru');

      await page.goto(service.url('/oauth/authorize?client_id=nobody&response_type=code&scope=openid'));
      const text = await page.locator('main').textContent();
      expect(text).not.toContain('client is invalid');
      await expectAccessible(page, artifacts, 'error-en');

      // A language we do not have: English, marked as English.
      await page.goto(service.url('/de/reset-password'));
      expect(await page.getAttribute('html', 'lang')).toBe('en');
      await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
    });
  });
});
