import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createCrmEnvelope,
  crmEventSchemas,
  crmMessageTypeNames,
  findPaymentPii,
  periodQuerySchema,
  salesAggregateSchema,
  type CrmEventData,
} from '../../src/management/crm-contract/index.js';
import {
  jsonSchemaFileTexts,
  schemaDirectory,
} from '../../src/management/crm-contract/write-json-schemas.js';

const paid: CrmEventData<'crm.invoice.paid'> = {
  invoiceId: 'inv-1001',
  customerId: 'cus-77',
  dealId: 'deal-5',
  amountMinor: 1_250_000,
  currency: 'RUB',
  issuedAt: '2026-03-01T09:00:00Z',
  dueAt: '2026-03-15T09:00:00Z',
  paidAt: '2026-03-04T12:30:00+03:00',
  status: 'paid',
  version: 3,
};
const envelope = (data: unknown, type = 'crm.invoice.paid') =>
  createCrmEnvelope(type, data, { occurredAt: '2026-03-04T09:30:00Z' });
const issuesOf = (value: unknown, type: keyof typeof crmEventSchemas = 'crm.invoice.paid') => {
  const parsed = crmEventSchemas[type].safeParse(value);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe('the crm contract (identity-service/crm-contract)', () => {
  it('has one schema per crm event type of the spec, each with the versioned envelope', () => {
    expect(crmMessageTypeNames.sort()).toEqual(
      [
        'crm.lead.created',
        'crm.deal.created',
        'crm.deal.won',
        'crm.deal.lost',
        'crm.invoice.issued',
        'crm.invoice.paid',
        'crm.invoice.overdue',
        'crm.payment.succeeded',
        'crm.payment.failed',
        'crm.refund.created',
        'crm.entitlement.activated',
        'crm.entitlement.revoked',
        'crm.teacher_payout.approved',
        'crm.teacher_payout.paid',
      ].sort(),
    );
    const message = envelope(paid);
    expect(issuesOf(message)).toEqual([]);
    expect(message).toMatchObject({ source: 'crm', schemaVersion: 1, messageType: 'crm.invoice.paid' });
  });

  it('refuses amounts that are not integer minor units, unknown currencies, a status of another type', () => {
    expect(issuesOf(envelope({ ...paid, amountMinor: 12.5 }))).toEqual([
      'data.amountMinor: Invalid input: expected int, received number',
    ]);
    expect(issuesOf(envelope({ ...paid, currency: 'rub' }))[0]).toContain('data.currency');
    expect(issuesOf(envelope({ ...paid, currency: 'XYZ' }))).toEqual([
      'data.currency: is not an ISO 4217 currency code',
    ]);
    expect(issuesOf(envelope({ ...paid, status: 'issued' }))[0]).toContain('data.status');
    const { paidAt: _paidAt, ...withoutPaidAt } = paid;
    expect(issuesOf(envelope(withoutPaidAt))[0]).toContain('data.paidAt');
    expect(issuesOf({ ...envelope(paid), schemaVersion: 2 })[0]).toContain('schemaVersion');
    expect(issuesOf({ ...envelope(paid), messageId: undefined })[0]).toContain('messageId');
  });

  it.each([
    [
      'a card number in a field of its own',
      { ...paid, cardNumber: '4111 1111 1111 1111' },
      'data.cardNumber',
    ],
    ['a CVC', { ...paid, cvc: '123' }, 'data.cvc'],
    ['a bank account', { ...paid, bank_account: '40817810099910004312' }, 'data.bank_account'],
    ['a card number used as an id', { ...paid, customerId: '5500005555555559' }, 'data.customerId'],
    ['an IBAN inside a text', { ...paid, note: 'pay to DE89370400440532013000 please' }, 'data.note'],
    [
      'a full name with a passport',
      { ...paid, payer: { fullName: 'Ivan Petrov', passport: '4510 123456' } },
      'data.payer.fullName',
    ],
  ])('refuses payment PII: %s', (_case, data, where) => {
    const message = envelope(data);
    const issues = issuesOf(message);
    expect(issues.some((issue) => issue.startsWith(`${where}: payment PII`))).toBe(true);
    // Only paths are reported, never the values.
    expect(JSON.stringify(issues)).not.toMatch(/4111|5500|DE89|Petrov|4510/);
    expect(findPaymentPii(message)).toContain(where);
  });

  it('does not take ordinary ids, dates, uuids or amounts for PII', () => {
    expect(
      findPaymentPii(envelope({ ...paid, invoiceId: '2026-000123', amountMinor: 4111111111111111 })),
    ).toEqual([]);
    expect(findPaymentPii({ id: '12345678-1234-4234-9234-123456789012', name: 'Webinar' })).toEqual([]);
    // Message ids: a digit-heavy UUID reads like a grouped number; none may pass for a card number.
    const flagged = Array.from({ length: 20_000 }, () => crypto.randomUUID()).filter(
      (id) => findPaymentPii({ messageId: id }).length > 0,
    );
    expect(flagged).toEqual([]);
  });

  it('finds a card number glued to other characters', () => {
    expect(findPaymentPii({ note: 'card4111111111111111' })).toEqual(['note']);
    expect(findPaymentPii({ note: 'cus-4111-1111-1111-1111' })).toEqual(['note']);
    expect(findPaymentPii({ note: 'order 4111 1111 1111 1112' })).toEqual([]);
  });

  it('reads periods as UTC days, from included and to excluded, at most 366 days', () => {
    expect(periodQuerySchema.safeParse({ from: '2026-01-01', to: '2026-02-01' }).success).toBe(true);
    expect(periodQuerySchema.safeParse({ from: '2026-02-01', to: '2026-01-01' }).success).toBe(false);
    expect(periodQuerySchema.safeParse({ from: '2026-01-01', to: '2027-01-03' }).success).toBe(false);
    expect(periodQuerySchema.safeParse({ from: '2026-1-1', to: '2026-02-01' }).success).toBe(false);
    expect(
      salesAggregateSchema.safeParse({
        from: '2026-01-01',
        to: '2026-02-01',
        generatedAt: '2026-02-01T00:00:00Z',
        leads: { created: 1 },
        deals: { created: 1, won: 0, lost: 0 },
        currencies: [],
      }).success,
    ).toBe(true);
  });

  it('publishes the same schemas as JSON Schema files, kept current (npm run crm-contract:schemas)', async () => {
    const expected = await jsonSchemaFileTexts();
    const committed: Record<string, string> = {};
    for (const entry of await fs.readdir(schemaDirectory, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const file = path.relative(schemaDirectory, path.join(entry.parentPath, entry.name));
      committed[file] = await fs.readFile(path.join(schemaDirectory, file), 'utf8');
    }
    expect(Object.keys(committed).sort()).toEqual(Object.keys(expected).sort());
    for (const [file, text] of Object.entries(expected)) expect(committed[file], file).toBe(text);
    const invoicePaid = JSON.parse(expected['events/crm.invoice.paid.json']!);
    expect(invoicePaid.properties.data.additionalProperties).toBe(false);
    expect(invoicePaid.properties.data.required).toContain('invoiceId');
  });
});
