import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { utcDayOf } from '../../src/management/crm-contract/value-formats.js';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { CrmState } from '../../src/management/crm-simulator/crm-state.js';
import { snapshotUnavailableType } from '../../src/management/snapshots/crm-snapshots.js';
import { createTestDatabase } from '../support/database.js';
import { ManualClock } from '../support/manual-clock.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { serviceToken, userTokenWith } from '../platform/support/platform-tokens.js';
import {
  consumed,
  crmReaderClient,
  managementGet,
  publishInProcess,
  startSimulatedCrmApi,
} from './support/crm-fixtures.js';

const history = generateCrmHistory({ seed: 21, start: '2026-01-01', days: 62, leadsPerDay: 10 });
const truth = new CrmState();
for (const envelope of history) truth.apply(envelope);
const clock = new ManualClock(new Date('2026-03-05T12:00:00Z'));
const period = { from: '2026-01-01', to: '2026-03-01' };
const query = `?from=${period.from}&to=${period.to}`;

let svc: TestService;
let crmApi: Awaited<ReturnType<typeof startSimulatedCrmApi>>;
let reader: string;
beforeAll(async () => {
  crmApi = await startSimulatedCrmApi(() => truth);
  const database = await createTestDatabase();
  svc = await startTestService({
    database,
    clock,
    env: { CRM_BASE_URL: crmApi.url, ...(await crmReaderClient(database.db)) },
  });
  crmApi.attach(svc);
  reader = await userTokenWith(svc, ['management.dashboards.read.finance']);
  await publishInProcess(svc, history);
  await consumed(svc);
});
afterAll(async () => {
  await svc?.close();
  await svc?.database.close();
  await crmApi?.close();
});

const inPeriod = (instant: unknown) => {
  const day = utcDayOf(String(instant));
  return day >= period.from && day < period.to;
};

describe('the dashboards API (/api/v2/management/dashboards)', () => {
  it('needs a main-auth or service token with management.dashboards.read.finance', async () => {
    expect((await managementGet(svc, `/dashboards/finance${query}`)).status).toBe(401);
    const nobody = await userTokenWith(svc, []);
    const forbidden = await managementGet(svc, `/dashboards/sales${query}`, nobody);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({
      error: 'forbidden',
      details: { permission: 'management.dashboards.read.finance' },
    });
    // A third-party application's token never opens the dashboards.
    const { tokens } = await userWithTokens(svc);
    expect((await managementGet(svc, `/dashboards/finance${query}`, tokens.access_token)).status).toBe(401);
    const service = await serviceToken(svc, ['service:management.dashboards.read.finance']);
    expect((await managementGet(svc, `/dashboards/marketing${query}`, service.token)).status).toBe(200);
    expect((await managementGet(svc, `/dashboards/marketing${query}`, reader)).status).toBe(200);
  });

  it('documents itself (OpenAPI 3.1, from the same schemas)', async () => {
    const document = await managementGet(svc, '/openapi.json');
    expect(document.status).toBe(200);
    expect(Object.keys(document.body.paths)).toEqual(
      expect.arrayContaining([
        '/dashboards/finance',
        '/dashboards/marketing',
        '/dashboards/sales',
        '/metrics',
      ]),
    );
  });

  it.each([
    ['no period', ''],
    ['a reversed period', '?from=2026-03-01&to=2026-01-01'],
    ['a period over 366 days', '?from=2024-01-01&to=2026-01-01'],
    ['a bad day', '?from=2026-02-30&to=2026-03-01'],
    ['an unknown parameter', `${query}&currency=RUB`],
  ])('answers 400 for %s', async (_case, badQuery) => {
    const answer = await managementGet(svc, `/dashboards/finance${badQuery}`, reader);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: 'invalid_request' });
  });

  it('shows the finance figures of the period: exactly what crm recorded', async () => {
    const { status, body } = await managementGet(svc, `/dashboards/finance${query}`, reader);
    expect(status).toBe(200);
    const crmSales = truth.sales(period, clock.now());
    for (const entry of crmSales.currencies) {
      const shown = body.currencies.find((row: { currency: string }) => row.currency === entry.currency);
      expect(shown.revenue).toEqual(entry.paymentsSucceeded);
      expect(shown.refunds).toEqual(entry.refunds);
      expect(shown.netRevenueMinor).toBe(entry.paymentsSucceeded.amountMinor - entry.refunds.amountMinor);
      const invoices = shown.invoices;
      expect(invoices.issued.count + invoices.paid.count + invoices.overdue.count).toBe(
        entry.invoicesIssued.count,
      );
    }
    const revenueByDay = body.revenueByDay.reduce(
      (sum: number, point: { currency: string; amountMinor: number }) =>
        point.currency === 'RUB' ? sum + point.amountMinor : sum,
      0,
    );
    expect(revenueByDay).toBe(
      crmSales.currencies.find((entry) => entry.currency === 'RUB')!.paymentsSucceeded.amountMinor,
    );
    const january = truth.teacherPayouts('2026-01', clock.now()).currencies[0]!;
    expect(body.teacherPayouts).toContainEqual({
      month: '2026-01',
      currency: 'RUB',
      approved: january.approved,
      paid: january.paid,
    });
    const { asOf: _asOf, ...balance } = truth.balance(clock.now());
    expect(body.balance.currencies).toEqual(balance.currencies);
  });

  it('shows marketing by lead source and sales KPIs by owner as crm recorded them', async () => {
    const marketing = (await managementGet(svc, `/dashboards/marketing${query}`, reader)).body;
    const sales = (await managementGet(svc, `/dashboards/sales${query}`, reader)).body;
    const leads = new Map<string, number>();
    for (const lead of truth.records('lead')) {
      if (inPeriod(lead.createdAt)) leads.set(String(lead.source), (leads.get(String(lead.source)) ?? 0) + 1);
    }
    const won = new Map<string, number>();
    const lost = new Map<string, number>();
    for (const deal of truth.records('deal')) {
      if (deal.status === 'won' && inPeriod(deal.closedAt))
        won.set(String(deal.ownerId), (won.get(String(deal.ownerId)) ?? 0) + 1);
      if (deal.status === 'lost' && inPeriod(deal.closedAt))
        lost.set(String(deal.ownerId), (lost.get(String(deal.ownerId)) ?? 0) + 1);
    }
    for (const [source, count] of leads) {
      expect(marketing.sources.find((row: { source: string }) => row.source === source).leads).toBe(count);
    }
    expect(marketing.sources.find((row: { source: string }) => row.source === 'direct').leads).toBe(0);
    for (const row of sales.owners as {
      ownerId: string;
      dealsWon: number;
      dealsLost: number;
      conversion: number;
    }[]) {
      expect(row.dealsWon).toBe(won.get(row.ownerId) ?? 0);
      expect(row.dealsLost).toBe(lost.get(row.ownerId) ?? 0);
      expect(row.conversion).toBeCloseTo(row.dealsWon / (row.dealsWon + row.dealsLost), 4);
    }
    const crmSales = truth.sales(period, clock.now());
    expect(sales.total).toMatchObject({
      dealsCreated: crmSales.deals.created,
      dealsWon: crmSales.deals.won,
      dealsLost: crmSales.deals.lost,
    });
  });

  it('reconciles with crm’s snapshots of the same period: nothing differs once every event is in', async () => {
    const { body } = await managementGet(svc, `/dashboards/finance/reconciliation${query}`, reader);
    expect(body.sales).toMatchObject({ status: 'matched', snapshot: { status: 'fresh' } });
    expect(body.balance).toMatchObject({ status: 'matched', snapshot: { status: 'fresh' } });
    expect(
      body.teacherPayouts.map((entry: { month: string; status: string }) => [entry.month, entry.status]),
    ).toEqual([
      ['2026-01', 'matched'],
      ['2026-02', 'matched'],
    ]);
    expect(body.sales.differences.length).toBeGreaterThan(10);
    expect(body.sales.differences.every((row: { difference: number }) => row.difference === 0)).toBe(true);
  });

  it('when crm is down or answers garbage: the last snapshot, marked stale, an alert on the bus, an error log, a metric', async () => {
    const alerts: unknown[] = [];
    const subscription = svc.service.events.bus.subscribe(
      snapshotUnavailableType,
      (envelope) => void alerts.push(envelope.data),
    );
    const errorLog = vi.spyOn(svc.service.logger, 'error');
    try {
      const before = (await managementGet(svc, `/dashboards/finance/reconciliation${query}`, reader)).body;
      crmApi.control.mode = 'down';
      clock.advanceSeconds(120);
      const down = (await managementGet(svc, `/dashboards/finance/reconciliation${query}`, reader)).body;
      expect(down.sales).toMatchObject({
        status: 'matched',
        snapshot: {
          status: 'stale',
          fetchedAt: before.sales.snapshot.fetchedAt,
          body: before.sales.snapshot.body,
        },
      });
      expect(down.sales.snapshot.error).toContain('503');
      await new Promise((resolve) => setImmediate(resolve));
      expect(alerts).toContainEqual(
        expect.objectContaining({
          kind: 'sales',
          period: `${period.from}/${period.to}`,
          reason: 'http_error',
        }),
      );
      expect(errorLog).toHaveBeenCalledWith(
        expect.objectContaining({ kind: 'sales', reason: 'http_error' }),
        'crm snapshot unavailable; serving the last successful one',
      );
      // Within the retry interval crm is not asked again (no waiting on it, no flood of alerts).
      const requests = crmApi.control.requests;
      const again = (await managementGet(svc, `/dashboards/finance/reconciliation${query}`, reader)).body;
      expect(again.sales.snapshot.status).toBe('stale');
      expect(crmApi.control.requests).toBe(requests);

      crmApi.control.mode = 'garbage';
      clock.advanceSeconds(60);
      const garbage = (await managementGet(svc, `/dashboards/finance/reconciliation${query}`, reader)).body;
      expect(garbage.balance.snapshot).toMatchObject({
        status: 'stale',
        fetchedAt: before.balance.snapshot.fetchedAt,
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(alerts).toContainEqual(expect.objectContaining({ kind: 'balance', reason: 'malformed' }));
      // A period crm never answered for: nothing to show, said so.
      const never = (
        await managementGet(svc, '/dashboards/finance/reconciliation?from=2025-01-01&to=2025-02-01', reader)
      ).body;
      expect(never.sales).toMatchObject({ status: 'no_snapshot', snapshot: { status: 'unavailable' } });

      const scraper = await serviceToken(svc, ['service:management.metrics.read']);
      const metrics = await managementGet(svc, '/metrics', scraper.token);
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(
        /management_crm_snapshot_failures_total\{kind="sales",reason="http_error"\} 1\n/,
      );
      expect(metrics.text).toMatch(
        /management_crm_snapshot_failures_total\{kind="balance",reason="malformed"\} 1\n/,
      );
      expect(metrics.text).toMatch(/management_crm_messages_total\{outcome="applied"\} \d+/);
      expect((await managementGet(svc, '/metrics', reader)).status).toBe(403);

      crmApi.control.mode = 'ok';
      clock.advanceSeconds(60);
      const back = (await managementGet(svc, `/dashboards/finance/reconciliation${query}`, reader)).body;
      expect(back.sales.snapshot.status).toBe('fresh');
      expect(back.sales.snapshot.fetchedAt).toBe(clock.now().toISOString());
    } finally {
      subscription.unsubscribe();
      errorLog.mockRestore();
      crmApi.control.mode = 'ok';
    }
  });

  it('shows the difference while events are missing', async () => {
    const extra = history.find((envelope) => envelope.messageType === 'crm.payment.succeeded')!;
    const late = {
      ...extra,
      messageId: '0b7f3f2e-4c2a-4f43-9a7e-8f0a5f1a2b3c',
      data: {
        ...(extra.data as object),
        paymentId: 'pay-only-in-management',
        processedAt: '2026-02-10T10:00:00Z',
      },
    };
    await publishInProcess(svc, [late]);
    await consumed(svc);
    clock.advanceSeconds(120);
    const { body } = await managementGet(svc, `/dashboards/finance/reconciliation${query}`, reader);
    expect(body.sales.status).toBe('differs');
    const amount = late.data as unknown as { amountMinor: number; currency: string };
    expect(body.sales.differences.filter((row: { difference: number }) => row.difference !== 0)).toEqual([
      expect.objectContaining({
        figure: 'paymentsSucceeded.amountMinor',
        currency: amount.currency,
        difference: amount.amountMinor,
      }),
      expect.objectContaining({
        figure: 'paymentsSucceeded.count',
        currency: amount.currency,
        difference: 1,
      }),
    ]);
    expect(z.array(z.unknown()).parse(body.teacherPayouts)).toHaveLength(2);
  });
});
