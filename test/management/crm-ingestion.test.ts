import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { createCrmEnvelope, type CrmEventData } from '../../src/management/crm-contract/index.js';
import { chaoticDelivery } from '../../src/management/crm-simulator/crm-delivery.js';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { consumerBalance, consumerSales } from '../../src/management/dashboards/consumer-figures.js';
import { listDeadLetters } from '../../src/management/ingestion/dead-letters.js';
import { crmIntegrationErrorType } from '../../src/management/ingestion/integration-errors.js';
import { startTestService, type TestService } from '../support/test-service.js';
import {
  allTimeTotalsAgainstDaily,
  consumed,
  figuresOf,
  groundTruth,
  publishInProcess,
  storedTotals,
  totalsRebuiltFromRecords,
} from './support/crm-fixtures.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.close());

const invoice = (overrides: Partial<CrmEventData<'crm.invoice.paid'>> = {}) => ({
  invoiceId: `inv-${crypto.randomBytes(4).toString('hex')}`,
  customerId: 'cus-1',
  dealId: null,
  amountMinor: 100_000,
  currency: 'EUR',
  issuedAt: '2025-06-02T10:00:00Z',
  dueAt: '2025-06-16T10:00:00Z',
  version: 1,
  ...overrides,
});
const june = { from: '2025-06-01', to: '2025-07-01' };
const eurFigures = async () => {
  const sales = await consumerSales(svc.service.db, june, new Date());
  return sales.currencies.find((entry) => entry.currency === 'EUR');
};

describe('the management consumer on the embedded bus', () => {
  it('ends with exactly the ground truth from 3 copies of every event in shuffled order, with poison mixed in', async () => {
    const history = generateCrmHistory({ seed: 11, start: '2026-01-01', days: 45, leadsPerDay: 12 });
    const delivery = chaoticDelivery(history, {
      seed: 12,
      copies: 3,
      shuffle: true,
      unknownStatuses: 4,
      missingIds: 4,
      paymentPii: 2,
    });
    await publishInProcess(svc, delivery.texts);
    await consumed(svc);

    const periods = [
      { from: '2026-01-01', to: '2026-02-01' },
      { from: '2026-02-01', to: '2026-03-01' },
      { from: '2026-01-01', to: '2026-03-01' },
      { from: '2026-01-10', to: '2026-01-11' },
    ];
    const { consumer, crm } = await figuresOf(svc.service.db, groundTruth(history), periods, [
      '2026-01',
      '2026-02',
    ]);
    expect(consumer).toEqual(crm);
    expect((consumer.sales[2] as { deals: { created: number } }).deals.created).toBeGreaterThan(50);

    const deadLetters = await listDeadLetters(svc.service.db, { reason: 'unknown_status' });
    expect(deadLetters.map((letter) => letter.messageId).sort()).toEqual([...delivery.deadLetterIds].sort());
    // Each poison message came twice: seen twice, one row.
    expect(deadLetters.every((letter) => letter.timesSeen === 2)).toBe(true);
    const errors = await listAuditEvents(svc.service.db, { type: crmIntegrationErrorType, limit: 100 });
    expect(errors).toHaveLength(delivery.rejected);
    expect(await storedTotals(svc.service.db)).toEqual(await totalsRebuiltFromRecords(svc.service.db));
    const { allTime, daily } = await allTimeTotalsAgainstDaily(svc.service.db);
    expect(allTime).toEqual(daily);
  });

  it('keeps the newest version: an older one arriving later, or the same one again, changes no total', async () => {
    const paid = invoice({ version: 3, status: 'paid', paidAt: '2025-06-05T10:00:00Z' } as never);
    const issued = invoice({ invoiceId: paid.invoiceId, version: 1 });
    const send = (type: string, data: object) =>
      createCrmEnvelope(
        type,
        { ...data, status: type.split('.').at(-1) },
        { occurredAt: '2025-06-05T10:00:00Z' },
      );
    const paidMessage = send('crm.invoice.paid', paid);
    await publishInProcess(svc, [paidMessage]);
    await consumed(svc);
    const after = await eurFigures();
    expect(after?.invoicesIssued).toEqual({ count: 1, amountMinor: 100_000 });

    await publishInProcess(svc, [
      send('crm.invoice.issued', issued),
      paidMessage,
      send('crm.invoice.overdue', { ...issued, version: 2 }),
    ]);
    await consumed(svc);
    expect(await eurFigures()).toEqual(after);
    const balance = await consumerBalance(svc.service.db, new Date());
    expect(balance.currencies.find((entry) => entry.currency === 'EUR')?.outstandingMinor ?? 0).toBe(0);
    const record = await svc.service
      .db('crm_records')
      .where({ entity: 'invoice', record_id: paid.invoiceId })
      .first();
    expect(record).toMatchObject({ status: 'paid', version: 3 });
  });

  it('sends an unknown status to the dead-letter table and leaves the dashboards as they were', async () => {
    const before = await eurFigures();
    const message = createCrmEnvelope(
      'crm.invoice.paid',
      { ...invoice({ paidAt: '2025-06-03T00:00:00Z' } as never), status: 'partially_paid' },
      { occurredAt: '2025-06-03T00:00:00Z' },
    );
    await publishInProcess(svc, [message]);
    await consumed(svc);
    await publishInProcess(svc, [message]);
    await consumed(svc);
    expect(await eurFigures()).toEqual(before);
    const [letter] = (await listDeadLetters(svc.service.db)).filter(
      (entry) => entry.messageId === message.messageId,
    );
    expect(letter).toMatchObject({
      reason: 'unknown_status',
      messageType: 'crm.invoice.paid',
      timesSeen: 2,
      envelope: message,
    });
    expect(letter!.detail).toContain('partially_paid');
    expect(letter!.lastSeenAt.getTime()).toBeGreaterThanOrEqual(letter!.firstSeenAt.getTime());
  });

  it('keeps aside, at once, a message the database cannot store, and applies the rest of its batch', async () => {
    // PostgreSQL's jsonb refuses the NUL character and lone surrogates: such a message was neither
    // applied nor kept as a dead letter, and took its whole batch apart at every delivery until dropped.
    const nul = createCrmEnvelope(
      'crm.invoice.issued',
      { ...invoice({ currency: 'EU\u0000R' }), status: 'issued' },
      { occurredAt: '2025-06-03T00:00:00Z' },
    );
    const surrogate = createCrmEnvelope(
      'crm.invoice.issued',
      { ...invoice(), status: 'issued', ['note\ud800']: 'x' } as never,
      { occurredAt: '2025-06-03T00:00:00Z' },
    );
    const fineInvoice = invoice();
    const fine = createCrmEnvelope(
      'crm.invoice.issued',
      { ...fineInvoice, status: 'issued' },
      { occurredAt: '2025-06-03T00:00:00Z' },
    );
    const started = Date.now();
    await publishInProcess(svc, [nul, surrogate, fine]);
    await consumed(svc);
    // No redelivery was needed (the first one waits a second).
    expect(Date.now() - started).toBeLessThan(1000);
    const record = await svc.service
      .db('crm_records')
      .where({ entity: 'invoice', record_id: fineInvoice.invoiceId })
      .first();
    expect(record).toMatchObject({ status: 'issued', version: 1 });
    const errors = await listAuditEvents(svc.service.db, { type: crmIntegrationErrorType, limit: 2 });
    expect(errors.map((error) => error.details)).toEqual([
      {
        source: 'crm',
        reason: 'malformed',
        detail: 'data: a key must be well-formed Unicode (a lone UTF-16 surrogate is not a character)',
        messageId: surrogate.messageId,
        messageType: 'crm.invoice.issued',
      },
      {
        source: 'crm',
        reason: 'malformed',
        detail: 'data.currency: must not contain the NUL character (U+0000)',
        messageId: nul.messageId,
        messageType: 'crm.invoice.issued',
      },
    ]);
  });

  it('rejects an event without its id and writes an integration error to the audit log', async () => {
    const { invoiceId: _id, ...withoutInvoiceId } = invoice({ amountMinor: 999 });
    const noKey = createCrmEnvelope(
      'crm.invoice.issued',
      { ...withoutInvoiceId, status: 'issued' },
      {
        occurredAt: '2025-06-03T00:00:00Z',
      },
    );
    const { messageId: _messageId, ...noMessageId } = createCrmEnvelope(
      'crm.invoice.issued',
      { ...invoice({ amountMinor: 998 }), status: 'issued' },
      { occurredAt: '2025-06-03T00:00:00Z' },
    );
    const before = await eurFigures();
    await publishInProcess(svc, [noKey, noMessageId]);
    await consumed(svc);
    expect(await eurFigures()).toEqual(before);
    const errors = await listAuditEvents(svc.service.db, { type: crmIntegrationErrorType, limit: 2 });
    expect(errors.map((error) => error.details)).toEqual([
      {
        source: 'crm',
        reason: 'missing_id',
        detail: 'messageId is missing',
        messageType: 'crm.invoice.issued',
      },
      {
        source: 'crm',
        reason: 'missing_id',
        detail: 'data.invoiceId is missing',
        messageId: noKey.messageId,
        messageType: 'crm.invoice.issued',
      },
    ]);
    expect(
      await svc.service.db('crm_dead_letters').where({ message_id: noKey.messageId }).first(),
    ).toBeUndefined();
  });

  it('refuses a payment card in a message without storing any of it', async () => {
    const message = createCrmEnvelope(
      'crm.payment.succeeded',
      {
        paymentId: 'pay-pii',
        invoiceId: 'inv-pii',
        customerId: 'cus-pii',
        amountMinor: 500,
        currency: 'EUR',
        processedAt: '2025-06-03T00:00:00Z',
        status: 'succeeded',
        version: 1,
        card: { number: '4111111111111111', cvc: '123' },
      },
      { occurredAt: '2025-06-03T00:00:00Z' },
    );
    await publishInProcess(svc, [message]);
    await consumed(svc);
    const [error] = await listAuditEvents(svc.service.db, { type: crmIntegrationErrorType, limit: 1 });
    expect(error!.details).toMatchObject({ reason: 'payment_pii', messageId: message.messageId });
    expect(JSON.stringify(error)).not.toContain('4111');
    const stored = await svc.service.db.raw(
      `select (select count(*)::int from crm_events where envelope::text like '%4111111111111111%')
            + (select count(*)::int from crm_dead_letters where envelope::text like '%4111111111111111%') as count`,
    );
    expect(stored.rows[0].count).toBe(0);
  });
});
