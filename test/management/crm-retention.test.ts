import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupExpiredRecords, cleanupTasks } from '../../src/jobs/cleanup-expired-records.js';
import { createCrmEnvelope } from '../../src/management/crm-contract/index.js';
import { consumerBalance } from '../../src/management/dashboards/consumer-figures.js';
import { ManualClock } from '../support/manual-clock.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { consumed, publishInProcess } from './support/crm-fixtures.js';

const clock = new ManualClock(new Date('2026-03-01T12:00:00Z'));
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ clock });
});
afterAll(() => svc?.close());

const dayMs = 24 * 60 * 60 * 1000;
const counts = async () => {
  const { rows } = await svc.service.db.raw(`
    select (select count(*)::int from crm_events) as events, (select count(*)::int from crm_records) as records,
           (select count(*)::int from crm_daily_totals) as totals, (select count(*)::int from crm_dead_letters) as dead_letters`);
  return rows[0];
};

describe('financial facts and events are kept 7 years', () => {
  it('the hourly cleanup leaves them alone until 7 years have passed, then removes them', async () => {
    const paidAt = '2026-03-01T09:00:00Z';
    const payment = createCrmEnvelope(
      'crm.payment.succeeded',
      {
        paymentId: 'pay-kept-7y',
        invoiceId: 'inv-kept-7y',
        customerId: 'cus-kept',
        amountMinor: 123_400,
        currency: 'RUB',
        processedAt: paidAt,
        status: 'succeeded',
        version: 1,
      },
      { occurredAt: paidAt },
    );
    const poison = createCrmEnvelope(
      'crm.payment.succeeded',
      { ...payment.data, paymentId: 'pay-poison-7y', status: 'chargeback' },
      { occurredAt: paidAt },
    );
    await publishInProcess(svc, [payment, poison]);
    await consumed(svc);
    expect(await counts()).toEqual({ events: 1, records: 1, totals: 1, dead_letters: 1 });

    // What the service runs every hour: the shared tasks and management's retention.
    const tasks = [...cleanupTasks, ...svc.service.management.retentionTasks];
    const sevenYearsLater = new Date(Date.parse(paidAt));
    sevenYearsLater.setUTCFullYear(sevenYearsLater.getUTCFullYear() + 7);

    for (const now of [
      clock.now(),
      new Date(clock.now().getTime() + 365 * dayMs),
      new Date(sevenYearsLater.getTime() - dayMs),
    ]) {
      await cleanupExpiredRecords(svc.service.db, now, tasks);
      expect(await counts(), now.toISOString()).toEqual({
        events: 1,
        records: 1,
        totals: 1,
        dead_letters: 1,
      });
    }
    const received = await consumerBalance(svc.service.db, clock.now());
    expect(received.currencies).toMatchObject([{ currency: 'RUB', receivedMinor: 123_400 }]);

    await cleanupExpiredRecords(svc.service.db, new Date(sevenYearsLater.getTime() + dayMs), tasks);
    expect(await counts()).toEqual({ events: 0, records: 0, totals: 0, dead_letters: 0 });
  });
});
