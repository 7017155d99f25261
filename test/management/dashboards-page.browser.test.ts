import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { minorUnitDigits } from '../../src/management/crm-contract/value-formats.js';
import { launchChromium } from '../support/browser.js';
import { createTestUser } from '../support/fixtures.js';
import { createTestDatabase } from '../support/database.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { createRole } from '../platform/support/platform-tokens.js';
import {
  consumed,
  crmReaderClient,
  groundTruth,
  publishInProcess,
  startSimulatedCrmApi,
} from './support/crm-fixtures.js';

const history = generateCrmHistory({ seed: 81, start: '2026-04-01', days: 30, leadsPerDay: 10 });
const truth = groundTruth(history);
const period = { from: '2026-04-01', to: '2026-05-01' };
const crmSales = truth.sales(period, new Date());

let svc: TestService;
let browser: Browser;
let crmApi: Awaited<ReturnType<typeof startSimulatedCrmApi>>;
beforeAll(async () => {
  crmApi = await startSimulatedCrmApi(() => truth);
  const database = await createTestDatabase();
  [svc, browser] = await Promise.all([
    startTestService({
      database,
      env: { CRM_BASE_URL: crmApi.url, ...(await crmReaderClient(database.db)) },
    }),
    launchChromium(),
  ]);
  crmApi.attach(svc);
  await publishInProcess(svc, history);
  await consumed(svc);
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await svc?.database.close();
  await crmApi?.close();
});

async function withPage<T>(run: (page: Page) => Promise<T>): Promise<T> {
  const context = await browser.newContext();
  try {
    return await run(await context.newPage());
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

const money = (lang: string, amountMinor: number, currency: string) =>
  new Intl.NumberFormat(lang, { style: 'currency', currency }).format(
    amountMinor / 10 ** minorUnitDigits(currency),
  );
const url = (lang: string) => svc.url(`/${lang}/management/dashboards?from=${period.from}&to=${period.to}`);
const loaded = (page: Page) => page.waitForSelector(`#dashboards[data-loaded="${period.from}/${period.to}"]`);

describe('the dashboards page (/:lang/management/dashboards) in a real browser', () => {
  it('asks to sign in when there is no session', async () => {
    await withPage(async (page) => {
      await page.goto(url('en'));
      await page.waitForSelector('[data-testid="signed-out"]:not([hidden])');
      expect(await page.textContent('[data-testid="signed-out"]')).toContain('You are not signed in.');
      expect(await page.getAttribute('[data-testid="signed-out"] a', 'href')).toBe(
        '/en/auth?return_to=%2Fen%2Fmanagement%2Fdashboards',
      );
    });
  });

  it('shows the totals as charts and tables in English and Russian, equal to crm’s', async () => {
    const role = await createRole(svc.service.db, ['management.dashboards.read.finance']);
    const user = await createTestUser(svc.service.db, { roles: [role] });
    await withPage(async (page) => {
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('console', (message) => {
        // The refresh before signing in answers 401: the browser logs that resource, not a script error.
        if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
          errors.push(message.text());
        }
      });
      await page.goto(url('en'));
      await page.waitForSelector('[data-testid="signed-out"]:not([hidden])');
      await signInInPage(page, user.email!, user.password);

      for (const lang of ['en', 'ru']) {
        await page.goto(url(lang));
        await loaded(page);
        expect(await page.getAttribute('html', 'lang')).toBe(lang);
        const rub = crmSales.currencies.find((entry) => entry.currency === 'RUB')!;
        expect(await page.textContent('[data-testid="revenue-RUB"]')).toBe(
          money(lang, rub.paymentsSucceeded.amountMinor, 'RUB'),
        );
        expect(await page.textContent('[data-testid="refunds-RUB"]')).toBe(
          money(lang, rub.refunds.amountMinor, 'RUB'),
        );
        expect(await page.textContent('[data-testid="sales-total-won"]')).toBe(
          new Intl.NumberFormat(lang).format(crmSales.deals.won),
        );
        const balance = truth.balance(new Date()).currencies.find((entry) => entry.currency === 'RUB')!;
        expect(await page.textContent('[data-testid="balance-net-RUB"]')).toBe(
          money(lang, balance.netMinor, 'RUB'),
        );
        expect(await page.getAttribute('[data-testid="reconciliation-sales"]', 'data-status')).toBe(
          'matched',
        );
        // Each line of the reconciliation says in words what it compares, not its key.
        const reconciled = await page.locator('#reconciliation p').allTextContents();
        expect(reconciled.map((line) => line.slice(0, line.indexOf(': ')))).toEqual(
          lang === 'en'
            ? ['Sales of the period', 'Balance now', 'Teacher payouts for April 2026']
            : ['Продажи за период', 'Баланс сейчас', 'Выплаты преподавателям за апрель 2026 г.'],
        );
        // The charts drew (Chart.js, served from our own assets).
        const drawn = await page.$$eval('canvas', (canvases) =>
          canvases.map((canvas) => {
            const chart = (globalThis as unknown as { Chart: { getChart(c: unknown): unknown } }).Chart;
            return [
              canvas.id,
              (canvas as unknown as { width: number }).width > 0 && chart.getChart(canvas) !== undefined,
            ];
          }),
        );
        expect(drawn).toEqual([
          ['revenue-chart', true],
          ['marketing-chart', true],
          ['sales-chart', true],
        ]);
      }
      expect(await page.textContent('#finance-title')).toBe('Финансы');
      expect(await page.textContent('[data-testid="reconciliation-sales"]')).toContain(
        'Итоги совпадают со снимком crm.',
      );
      expect(errors, errors.join('\n')).toEqual([]);
    });
  });

  it('tells a signed-in user without the permission that the dashboards are not for them', async () => {
    const user = await createTestUser(svc.service.db);
    await withPage(async (page) => {
      await page.goto(url('en'));
      await signInInPage(page, user.email!, user.password);
      await page.goto(url('en'));
      await page.waitForSelector('[data-testid="forbidden"]:not([hidden])');
      expect(await page.isHidden('#content')).toBe(true);
    });
  });
});
