// A crm message whose occurredAt is older than the 7-year retention: its event and record went at the
// next hourly cleanup (by occurredAt) while its figures, dated by the record's own dates, stayed; the
// same message delivered again then found no trace of itself and was counted a second time. Such a
// message is refused (past_retention), so no redelivery of it ever moves a total.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { cleanupExpiredRecords, cleanupTasks } from '../../src/jobs/cleanup-expired-records.js';
import { createCrmEnvelope } from '../../src/management/crm-contract/index.js';
import { consumerBalance, consumerSales } from '../../src/management/dashboards/consumer-figures.js';
import { crmIntegrationErrorType } from '../../src/management/ingestion/integration-errors.js';
import { consumed, publishInProcess } from '../management/support/crm-fixtures.js';
import { ManualClock } from '../support/manual-clock.js';
import { startTestService, type TestService } from '../support/test-service.js';

const clock = new ManualClock(new Date('2026-03-01T12:00:00Z'));
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ clock });
});
afterAll(() => svc?.close());

const february = { from: '2026-02-01', to: '2026-03-01' };

describe('a crm message dated before the retention', () => {
  it('is counted at most once, however often it is delivered around the hourly cleanup', async () => {
    // processedAt this February; occurredAt (which retention goes by) 20 years ago.
    const payment = createCrmEnvelope(
      'crm.payment.succeeded',
      {
        paymentId: 'pay-old-occurred',
        invoiceId: 'inv-old-occurred',
        customerId: 'cus-old',
        amountMinor: 500_000,
        currency: 'USD',
        processedAt: '2026-02-15T09:00:00Z',
        status: 'succeeded',
        version: 1,
      },
      { occurredAt: '2006-01-01T00:00:00Z' },
    );
    const tasks = [...cleanupTasks, ...svc.service.management.retentionTasks];
    const usd = async () => ({
      balance:
        (await consumerBalance(svc.service.db, clock.now())).currencies.find(
          (entry) => entry.currency === 'USD',
        )?.receivedMinor ?? 0,
      february:
        (await consumerSales(svc.service.db, february, clock.now())).currencies.find(
          (entry) => entry.currency === 'USD',
        )?.paymentsSucceeded.amountMinor ?? 0,
    });

    for (let delivery = 0; delivery < 3; delivery++) {
      await publishInProcess(svc, [payment]);
      await consumed(svc);
      await cleanupExpiredRecords(svc.service.db, clock.now(), tasks);
    }

    const figures = await usd();
    expect(figures.balance).toBeLessThanOrEqual(500_000);
    expect(figures.february).toBeLessThanOrEqual(500_000);
    // Refused, and the audit says why (never with the message).
    expect(figures).toEqual({ balance: 0, february: 0 });
    const errors = await listAuditEvents(svc.service.db, { type: crmIntegrationErrorType, limit: 10 });
    expect(errors[0]?.details).toMatchObject({
      reason: 'past_retention',
      messageId: payment.messageId,
      messageType: 'crm.payment.succeeded',
    });
  });
});
