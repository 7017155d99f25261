import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCrmEnvelope } from '../../src/management/crm-contract/index.js';
import { listDeadLetters } from '../../src/management/ingestion/dead-letters.js';
import { consumed, publishInProcess } from '../management/support/crm-fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

// An ISO instant of year 0000 (or one whose offset puts it there in UTC, or past 9999) is valid to
// zod, but PostgreSQL has no year 0 and the daily totals' day of such an instant can't be parsed: the
// message could not be applied, took its whole batch apart at every delivery, and was kept aside
// only on its last one, each redelivery waiting longer.
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.close());

const invoice = (issuedAt: string) => ({
  invoiceId: `inv-${crypto.randomBytes(4).toString('hex')}`,
  customerId: 'cus-1',
  dealId: null,
  amountMinor: 100_000,
  currency: 'EUR',
  issuedAt,
  dueAt: '2025-06-16T10:00:00Z',
  version: 1,
  status: 'issued',
});

describe('crm instants outside the years 1 to 9999 in UTC', () => {
  it('are kept aside at once, and the rest of their batch is applied', async () => {
    const odd = [
      { occurredAt: '0000-06-03T00:00:00Z', issuedAt: '2025-06-02T10:00:00Z' },
      { occurredAt: '0001-01-01T00:00:00+14:00', issuedAt: '2025-06-02T10:00:00Z' },
      { occurredAt: '9999-12-31T23:00:00-05:00', issuedAt: '2025-06-02T10:00:00Z' },
      { occurredAt: '2025-06-03T00:00:00Z', issuedAt: '0000-06-02T10:00:00Z' },
    ].map(({ occurredAt, issuedAt }) =>
      createCrmEnvelope('crm.invoice.issued', invoice(issuedAt), { occurredAt }),
    );
    const fineInvoice = invoice('2025-06-02T10:00:00Z');
    const fine = createCrmEnvelope('crm.invoice.issued', fineInvoice, { occurredAt: '2025-06-03T00:00:00Z' });
    const started = Date.now();
    await publishInProcess(svc, [...odd, fine]);
    await consumed(svc);
    // No redelivery was needed (the first one waits a second).
    expect(Date.now() - started).toBeLessThan(1000);
    const record = await svc.service
      .db('crm_records')
      .where({ entity: 'invoice', record_id: fineInvoice.invoiceId })
      .first();
    expect(record).toMatchObject({ status: 'issued', version: 1 });
    const kept = await listDeadLetters(svc.service.db, { limit: 50 });
    for (const message of odd) {
      expect(kept).toContainEqual(
        expect.objectContaining({ messageId: message.messageId, reason: 'invalid_payload' }),
      );
    }
  });
});
