import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSecretMatches, findClient } from '../../src/oidc/models/oauth-client.js';
import { launchChromium } from '../support/browser.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

const axeSource = (createRequire(import.meta.url)('axe-core') as { source: string }).source;

let service: TestService;
let browser: Browser;
let admin: Awaited<ReturnType<typeof createTestUser>>;
beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchChromium()]);
  admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

async function withPage<T>(run: (page: Page) => Promise<T>): Promise<T> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      // The refresh before signing in answers 401: the browser logs that resource, not a script error.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
        errors.push(message.text());
      }
    });
    const result = await run(page);
    expect(errors).toEqual([]);
    return result;
  } finally {
    await context.close();
  }
}

/** Signs in through the identity API from the page itself, so the browser keeps the refresh cookie. */
async function signInInPage(page: Page, identifier: string, password: string) {
  const status = await page.evaluate(
    async ({ identifier, password }) => {
      const post = (path: string, body: unknown) =>
        fetch(`/api/v2/identity${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const started = (await (await post('/auth/flow/start', { flow: 'login' })).json()) as {
        sessionId: string;
      };
      const identified = (await (
        await post('/auth/flow/step', {
          sessionId: started.sessionId,
          step: 'phone-email',
          input: { identifier },
        })
      ).json()) as { sessionId: string };
      const done = await post('/auth/flow/step', {
        sessionId: identified.sessionId,
        step: 'password',
        input: { password },
      });
      return done.status;
    },
    { identifier, password },
  );
  expect(status).toBe(200);
}

/** axe-core's violations on the page as it is now (run through the devtools protocol: the CSP stays on). */
async function axeViolations(page: Page) {
  await page.evaluate(axeSource);
  const { violations, passes } = await page.evaluate(async () => {
    type AxeResult = { id: string; nodes: unknown[] };
    const axe = (
      globalThis as unknown as { axe: { run(): Promise<{ violations: AxeResult[]; passes: AxeResult[] }> } }
    ).axe;
    const result = await axe.run();
    return {
      violations: result.violations.map((violation) => `${violation.id} (${violation.nodes.length})`),
      passes: result.passes.length,
    };
  });
  // The rules did run (labels, contrast, table headers...): an empty list means none failed.
  expect(passes).toBeGreaterThan(10);
  return violations;
}

const url = (lang: string) => service.url(`/${lang}/admin/oauth-clients`);
const row = (page: Page, name: string) => page.locator('#rows tr', { hasText: name });

async function openSignedIn(page: Page, lang: string) {
  await page.goto(url(lang));
  await page.waitForSelector('[data-testid="signed-out"]:not([hidden])');
  await signInInPage(page, admin.email!, admin.password);
  await page.goto(url(lang));
  await page.waitForSelector('#admin-clients[data-loaded]');
}

describe('the admin page of OAuth clients (/:lang/admin/oauth-clients) in a real browser', () => {
  it('asks to sign in when there is no session', async () => {
    await withPage(async (page) => {
      await page.goto(url('en'));
      await page.waitForSelector('[data-testid="signed-out"]:not([hidden])');
      expect(await page.getAttribute('[data-testid="signed-out"] a', 'href')).toBe(
        '/en/auth?return_to=%2Fen%2Fadmin%2Foauth-clients',
      );
      expect(await page.isHidden('#content')).toBe(true);
      expect(await axeViolations(page)).toEqual([]);
    });
  });

  it('tells a signed-in user without the permission so', async () => {
    const user = await createTestUser(service.service.db);
    await withPage(async (page) => {
      await page.goto(url('en'));
      await page.waitForSelector('[data-testid="signed-out"]:not([hidden])');
      await signInInPage(page, user.email!, user.password);
      await page.goto(url('en'));
      await page.waitForSelector('[data-testid="forbidden"]:not([hidden])');
      expect(await page.isHidden('#content')).toBe(true);
    });
  });

  it('creates (secret shown once), edits, disables, enables and deletes a client, in English', async () => {
    const name = `Backoffice ${Date.now()}`;
    await withPage(async (page) => {
      await openSignedIn(page, 'en');
      expect(await axeViolations(page)).toEqual([]);

      await page.fill('#create-name', name);
      await page.selectOption('#create-type', 'confidential');
      await page.fill('#create-redirect-uris', 'https://backoffice.example.com/callback');
      await page.fill('#create-scopes', 'openid email');
      await page.click('#create-form button[type="submit"]');
      await page.waitForSelector('[data-testid="secret"]:not([hidden])');
      const secret = (await page.textContent('[data-testid="secret-value"]'))!;
      expect(await page.textContent('#secret-notice')).toContain('shown only once');
      await expect.poll(() => row(page, name).count()).toBe(1);
      const clientId = (await row(page, name).getAttribute('data-client-id'))!;
      const stored = (await findClient(service.service.db, clientId))!;
      expect(clientSecretMatches(secret, stored.clientSecretHash!)).toBe(true);
      expect(await row(page, name).locator('[data-testid="status"]').textContent()).toBe('Active');
      expect(await axeViolations(page)).toEqual([]);

      // Edit: a new name and redirect URI.
      await row(page, name).locator('[data-testid="edit"]').click();
      await page.waitForSelector('#editor:not([hidden])');
      expect(await axeViolations(page)).toEqual([]);
      await page.fill('#edit-name', `${name} v2`);
      await page.fill('#edit-redirect-uris', 'https://backoffice.example.com/v2/callback');
      await page.click('#edit-form button[type="submit"]');
      await expect.poll(() => row(page, `${name} v2`).count()).toBe(1);
      expect((await findClient(service.service.db, clientId))!.redirectUris).toEqual([
        'https://backoffice.example.com/v2/callback',
      ]);

      // A change the rules refuse is shown, not saved.
      await row(page, `${name} v2`).locator('[data-testid="edit"]').click();
      await page.fill('#edit-redirect-uris', 'https://*.example.com/callback');
      await page.click('#edit-form button[type="submit"]');
      await page.waitForSelector('[data-testid="status"].error:not([hidden])');
      expect(await page.textContent('[data-testid="status"]')).toContain('redirect_uris.0');
      await page.click('#edit-cancel');

      await row(page, `${name} v2`).locator('[data-testid="disable"]').click();
      await expect
        .poll(() => row(page, `${name} v2`).locator('[data-testid="status"]').textContent())
        .toBe('Disabled');
      expect((await findClient(service.service.db, clientId))!.isActive).toBe(false);
      await row(page, `${name} v2`).locator('[data-testid="enable"]').click();
      await expect
        .poll(() => row(page, `${name} v2`).locator('[data-testid="status"]').textContent())
        .toBe('Active');

      page.once('dialog', (dialog) => void dialog.accept());
      await row(page, `${name} v2`).locator('[data-testid="delete"]').click();
      await expect.poll(() => row(page, `${name} v2`).count()).toBe(0);
      expect(await findClient(service.service.db, clientId)).toBeUndefined();
    });
  });

  it('shows a change beyond a client manager’s permissions as refused, and keeps the table', async () => {
    const { db } = service.service;
    // A delegated role: managing clients, without `*`.
    const [role] = await db('roles').insert({ key: 'client_manager', name: 'Client manager' }, ['id']);
    await db('role_permissions').insert({
      role_id: role.id,
      permission_key: 'identity.oauth_clients.manage',
    });
    const manager = await createTestUser(db, { roles: ['client_manager'] });
    const { client } = await createTestClient(db, { name: `Own app ${Date.now()}`, firstParty: true });
    await withPage(async (page) => {
      await page.goto(url('en'));
      await page.waitForSelector('[data-testid="signed-out"]:not([hidden])');
      await signInInPage(page, manager.email!, manager.password);
      await page.goto(url('en'));
      await page.waitForSelector('#admin-clients[data-loaded]');
      await row(page, client.name).locator('[data-testid="edit"]').click();
      await page.fill('#edit-redirect-uris', 'https://attacker.example/callback');
      await page.click('#edit-form button[type="submit"]');
      await page.waitForSelector('[data-testid="status"].error:not([hidden])');
      expect(await page.textContent('[data-testid="status"]')).toContain(
        'your permissions do not allow this change',
      );
      expect(await page.isHidden('#content')).toBe(false);
      expect((await findClient(db, client.clientId))!.redirectUris).toEqual(client.redirectUris);
    });
  });

  it('shows the table in Russian, axe-clean, and rotates a secret', async () => {
    const { client } = await createTestClient(service.service.db, {
      name: 'Сервер отчётов',
      type: 'confidential',
      redirectUris: ['https://reports.example.com/callback'],
    });
    await withPage(async (page) => {
      await openSignedIn(page, 'ru');
      expect(await page.textContent('h1')).toBe('OAuth-клиенты');
      // Every column header in Russian ("Client ID" was left in English).
      expect(await page.locator('[data-testid="clients"] thead th').allTextContents()).toEqual([
        'Название',
        'Идентификатор клиента',
        'Статус',
        'Создан',
        'Действия',
      ]);
      expect(await page.textContent('#create-form button[type="submit"]')).toBe('Создать клиента');
      const reports = row(page, 'Сервер отчётов');
      expect(await reports.locator('[data-testid="status"]').textContent()).toBe('Активен');
      expect(await reports.locator('[data-testid="disable"]').textContent()).toBe('Отключить');
      expect(await axeViolations(page)).toEqual([]);

      page.once('dialog', (dialog) => void dialog.accept());
      await reports.locator('[data-testid="rotate-secret"]').click();
      await page.waitForSelector('[data-testid="secret"]:not([hidden])');
      const secret = (await page.textContent('[data-testid="secret-value"]'))!;
      expect(await page.textContent('#secret-notice')).toContain('показывается только один раз');
      const stored = (await findClient(service.service.db, client.clientId))!;
      expect(clientSecretMatches(secret, stored.clientSecretHash!)).toBe(true);
      expect(await axeViolations(page)).toEqual([]);
    });
  });
});
