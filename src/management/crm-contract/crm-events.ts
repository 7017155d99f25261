import { z } from 'zod';
import { crmEnvelopeOf, type CrmEnvelope } from './crm-envelope.js';
import {
  amountMinorSchema,
  crmIdSchema,
  crmKeySchema,
  currencySchema,
  instantSchema,
  monthSchema,
  versionSchema,
} from './value-formats.js';

/**
 * The 14 crm event types management consumes (spec: Events consumed by management from crm). Every
 * event carries one crm record in full, as it is after the change, with its natural key, its
 * `version` and its `status`: management keeps the newest version of each record, so duplicates,
 * replays and out-of-order delivery can't change a total (docs/crm-contract.md, "Versions").
 */

/** The records crm reports: natural key and the statuses a record can have. */
export const crmEntities = {
  lead: { naturalKey: 'leadId', statuses: ['created'] },
  deal: { naturalKey: 'dealId', statuses: ['open', 'won', 'lost'] },
  invoice: { naturalKey: 'invoiceId', statuses: ['issued', 'paid', 'overdue'] },
  payment: { naturalKey: 'paymentId', statuses: ['succeeded', 'failed'] },
  refund: { naturalKey: 'refundId', statuses: ['created'] },
  entitlement: { naturalKey: 'entitlementId', statuses: ['active', 'revoked'] },
  teacher_payout: { naturalKey: 'payrollItemId', statuses: ['approved', 'paid'] },
} as const;

export type CrmEntity = keyof typeof crmEntities;

const money = { amountMinor: amountMinorSchema, currency: currencySchema };

const lead = {
  leadId: crmIdSchema,
  source: crmKeySchema.describe('Lead source (marketing channel), e.g. google_ads, referral'),
  createdAt: instantSchema,
  version: versionSchema,
};
const deal = {
  dealId: crmIdSchema,
  leadId: crmIdSchema.nullable().describe('The lead the deal came from, null for a direct deal'),
  ownerId: crmIdSchema.describe('The sales manager who owns the deal'),
  leadSource: crmKeySchema.describe('Source of the lead (copied by crm), "direct" without a lead'),
  ...money,
  createdAt: instantSchema,
  version: versionSchema,
};
const invoice = {
  invoiceId: crmIdSchema,
  customerId: crmIdSchema.describe('Opaque customer id (no name, no contact)'),
  dealId: crmIdSchema.nullable(),
  ...money,
  issuedAt: instantSchema,
  dueAt: instantSchema,
  version: versionSchema,
};
const payment = {
  paymentId: crmIdSchema,
  invoiceId: crmIdSchema,
  customerId: crmIdSchema,
  ...money,
  processedAt: instantSchema.describe('When the payment succeeded or failed'),
  version: versionSchema,
};
const refund = {
  refundId: crmIdSchema,
  paymentId: crmIdSchema,
  invoiceId: crmIdSchema,
  ...money,
  createdAt: instantSchema,
  reasonCode: crmKeySchema.optional(),
  version: versionSchema,
};
const entitlement = {
  entitlementId: crmIdSchema,
  customerId: crmIdSchema,
  productKey: crmKeySchema,
  activatedAt: instantSchema,
  version: versionSchema,
};
const teacherPayout = {
  payrollItemId: crmIdSchema,
  teacherId: crmIdSchema,
  period: monthSchema.describe('The payroll month the item pays for'),
  ...money,
  approvedAt: instantSchema,
  version: versionSchema,
};

const status = <Status extends string>(value: Status) =>
  z.literal(value).describe('Status of the record after this change');

/** messageType → the record it reports, the status it sets, whether it is financial, its data. */
export const crmMessageTypes = {
  'crm.lead.created': {
    entity: 'lead',
    status: 'created',
    financial: false,
    data: z.strictObject({ ...lead, status: status('created') }),
  },
  'crm.deal.created': {
    entity: 'deal',
    status: 'open',
    financial: false,
    data: z.strictObject({ ...deal, status: status('open') }),
  },
  'crm.deal.won': {
    entity: 'deal',
    status: 'won',
    financial: false,
    data: z.strictObject({ ...deal, status: status('won'), closedAt: instantSchema }),
  },
  'crm.deal.lost': {
    entity: 'deal',
    status: 'lost',
    financial: false,
    data: z.strictObject({
      ...deal,
      status: status('lost'),
      closedAt: instantSchema,
      lostReason: crmKeySchema.optional(),
    }),
  },
  'crm.invoice.issued': {
    entity: 'invoice',
    status: 'issued',
    financial: true,
    data: z.strictObject({ ...invoice, status: status('issued') }),
  },
  'crm.invoice.paid': {
    entity: 'invoice',
    status: 'paid',
    financial: true,
    data: z.strictObject({ ...invoice, status: status('paid'), paidAt: instantSchema }),
  },
  'crm.invoice.overdue': {
    entity: 'invoice',
    status: 'overdue',
    financial: true,
    data: z.strictObject({ ...invoice, status: status('overdue') }),
  },
  'crm.payment.succeeded': {
    entity: 'payment',
    status: 'succeeded',
    financial: true,
    data: z.strictObject({ ...payment, status: status('succeeded') }),
  },
  'crm.payment.failed': {
    entity: 'payment',
    status: 'failed',
    financial: true,
    data: z.strictObject({ ...payment, status: status('failed'), failureCode: crmKeySchema.optional() }),
  },
  'crm.refund.created': {
    entity: 'refund',
    status: 'created',
    financial: true,
    data: z.strictObject({ ...refund, status: status('created') }),
  },
  'crm.entitlement.activated': {
    entity: 'entitlement',
    status: 'active',
    financial: false,
    data: z.strictObject({ ...entitlement, status: status('active') }),
  },
  'crm.entitlement.revoked': {
    entity: 'entitlement',
    status: 'revoked',
    financial: false,
    data: z.strictObject({ ...entitlement, status: status('revoked'), revokedAt: instantSchema }),
  },
  'crm.teacher_payout.approved': {
    entity: 'teacher_payout',
    status: 'approved',
    financial: true,
    data: z.strictObject({ ...teacherPayout, status: status('approved') }),
  },
  'crm.teacher_payout.paid': {
    entity: 'teacher_payout',
    status: 'paid',
    financial: true,
    data: z.strictObject({ ...teacherPayout, status: status('paid'), paidAt: instantSchema }),
  },
} as const satisfies Record<
  string,
  { entity: CrmEntity; status: string; financial: boolean; data: z.ZodObject }
>;

export type CrmMessageType = keyof typeof crmMessageTypes;
export type CrmEventData<Type extends CrmMessageType> = z.infer<(typeof crmMessageTypes)[Type]['data']>;

export const crmMessageTypeNames = Object.keys(crmMessageTypes) as CrmMessageType[];

export function isCrmMessageType(value: unknown): value is CrmMessageType {
  return typeof value === 'string' && Object.hasOwn(crmMessageTypes, value);
}

/** The whole envelope schema of each message type (refusing payment PII), e.g. to publish with. */
export const crmEventSchemas = Object.fromEntries(
  crmMessageTypeNames.map((type) => [type, crmEnvelopeOf(type, crmMessageTypes[type].data)]),
) as unknown as {
  [Type in CrmMessageType]: z.ZodType<CrmEnvelope<CrmEventData<Type>> & { messageType: Type }>;
};
