import { z } from 'zod';
import {
  amountMinorSchema,
  crmIdSchema,
  currencySchema,
  daySchema,
  instantSchema,
  monthSchema,
} from './value-formats.js';

/**
 * The sales-domain reads management uses (spec: Sales domain reads used by management): requests and
 * answers of the three snapshot endpoints. A snapshot of a closed period is repeatable: the same
 * request answers the same figures (docs/crm-contract.md, "Snapshots").
 */

export const crmSnapshotPaths = {
  sales: '/api/v2/crm/aggregates/sales',
  balance: '/api/v2/crm/aggregates/balance',
  teacherPayouts: '/api/v2/crm/teacher-payouts',
} as const;

/** The service scope each read needs (client credentials). */
export const crmSnapshotScopes = {
  sales: 'service:crm.aggregates.read',
  balance: 'service:crm.aggregates.read',
  teacherPayouts: 'service:crm.teacher_payouts.read',
} as const;

/** At most this many days in one period. */
export const maximumPeriodDays = 366;

const dayMs = 24 * 60 * 60 * 1000;

/** A period of UTC days: `from` included, `to` excluded (January = from 2026-01-01 to 2026-02-01). */
export const periodQuerySchema = z
  .strictObject({ from: daySchema, to: daySchema })
  .refine((period) => period.from < period.to, { message: 'to must be after from', path: ['to'] })
  .refine((period) => (Date.parse(period.to) - Date.parse(period.from)) / dayMs <= maximumPeriodDays, {
    message: `a period spans at most ${maximumPeriodDays} days`,
    path: ['to'],
  });

export type Period = z.infer<typeof periodQuerySchema>;

export const payoutPeriodQuerySchema = z.strictObject({ period: monthSchema });

const figure = z
  .strictObject({ count: z.int().min(0), amountMinor: amountMinorSchema })
  .meta({ id: 'CrmFigure', description: 'How many records and their sum in minor units' });

export const salesAggregateSchema = z
  .strictObject({
    from: daySchema,
    to: daySchema,
    generatedAt: instantSchema,
    leads: z.strictObject({ created: z.int().min(0).describe('Leads created in the period') }),
    deals: z.strictObject({
      created: z.int().min(0).describe('Deals created in the period'),
      won: z.int().min(0).describe('Deals won in the period (by closedAt)'),
      lost: z.int().min(0).describe('Deals lost in the period (by closedAt)'),
    }),
    currencies: z
      .array(
        z.strictObject({
          currency: currencySchema,
          invoicesIssued: figure.describe('Invoices issued in the period, whatever their status now'),
          paymentsSucceeded: figure.describe('Succeeded payments processed in the period'),
          refunds: figure.describe('Refunds created in the period'),
          dealsWon: figure.describe('Deals won in the period and their amounts'),
        }),
      )
      .describe('One entry per currency that has any figure in the period, sorted by code'),
  })
  .meta({ id: 'CrmSalesAggregate', title: 'GET /api/v2/crm/aggregates/sales' });

export const balanceAggregateSchema = z
  .strictObject({
    asOf: instantSchema.describe('The moment the balance was computed'),
    currencies: z.array(
      z.strictObject({
        currency: currencySchema,
        receivedMinor: amountMinorSchema.describe('All succeeded payments'),
        refundedMinor: amountMinorSchema.describe('All refunds'),
        payoutsPaidMinor: amountMinorSchema.describe('All paid teacher payouts'),
        netMinor: z.int().describe('received - refunded - payouts paid (may be negative)'),
        outstandingMinor: amountMinorSchema.describe('Invoices issued or overdue, not yet paid'),
        overdueMinor: amountMinorSchema.describe('Invoices overdue'),
      }),
    ),
  })
  .meta({ id: 'CrmBalanceAggregate', title: 'GET /api/v2/crm/aggregates/balance' });

export const teacherPayoutsSchema = z
  .strictObject({
    period: monthSchema,
    generatedAt: instantSchema,
    currencies: z.array(
      z.strictObject({
        currency: currencySchema,
        approved: figure.describe('Payroll items of the period approved, not yet paid'),
        paid: figure.describe('Payroll items of the period paid'),
      }),
    ),
    items: z
      .array(
        z.strictObject({
          payrollItemId: crmIdSchema,
          teacherId: crmIdSchema,
          amountMinor: amountMinorSchema,
          currency: currencySchema,
          status: z.enum(['approved', 'paid']),
        }),
      )
      .max(100_000),
  })
  .meta({ id: 'CrmTeacherPayouts', title: 'GET /api/v2/crm/teacher-payouts' });

export type SalesAggregate = z.infer<typeof salesAggregateSchema>;
export type BalanceAggregate = z.infer<typeof balanceAggregateSchema>;
export type TeacherPayouts = z.infer<typeof teacherPayoutsSchema>;
