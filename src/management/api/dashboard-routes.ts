import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import type { DocumentedRouter } from '../../http/documented-router.js';
import { periodQuerySchema } from '../crm-contract/crm-snapshots.js';
import { financeDashboard } from '../dashboards/finance-dashboard.js';
import { marketingDashboard, salesDashboard } from '../dashboards/pipeline-dashboards.js';
import { reconcilePeriod } from '../dashboards/reconciliation.js';
import type { CrmSnapshots } from '../snapshots/crm-snapshots.js';
import { dashboardPermission } from './management-access.js';
import type { Middleware } from 'koa';

const figure = z.object({ count: z.int(), amountMinor: z.int() }).meta({ id: 'Figure' });
const period = z.object({ from: z.string(), to: z.string() });
const wonAmounts = z.array(z.object({ currency: z.string(), amountMinor: z.int() }));
const pipeline = {
  dealsCreated: z.int(),
  dealsWon: z.int(),
  dealsLost: z.int(),
  wonAmounts,
  conversion: z.number().nullable(),
};

const financeAnswer = z
  .object({
    period,
    currencies: z.array(
      z.object({
        currency: z.string(),
        revenue: figure.describe('Succeeded payments processed in the period'),
        refunds: figure,
        netRevenueMinor: z.int().describe('revenue - refunds'),
        failedPayments: figure,
        invoices: z
          .object({ issued: figure, paid: figure, overdue: figure })
          .describe('Invoices issued in the period, by their status now (issued = open)'),
      }),
    ),
    revenueByDay: z.array(z.object({ day: z.string(), currency: z.string(), amountMinor: z.int() })),
    teacherPayouts: z.array(
      z.object({ month: z.string(), currency: z.string(), approved: figure, paid: figure }),
    ),
    balance: z.object({ asOf: z.string(), currencies: z.array(z.record(z.string(), z.unknown())) }),
  })
  .meta({ id: 'FinanceDashboard' });

const snapshotView = z
  .object({
    status: z.enum(['fresh', 'stale', 'unavailable', 'not_configured']),
    fetchedAt: z.string().optional(),
    body: z.unknown().optional(),
    error: z.string().optional(),
  })
  .describe('stale: crm failed; this is its last successful answer (fetchedAt), and an alert was raised');
const reconciled = z.object({
  snapshot: snapshotView,
  status: z.enum(['matched', 'differs', 'no_snapshot']),
  differences: z.array(
    z.object({
      figure: z.string(),
      currency: z.string().nullable(),
      consumer: z.number(),
      snapshot: z.number(),
      difference: z.number().describe('consumer - snapshot'),
    }),
  ),
});

const errors = {
  400: { description: 'from / to missing or invalid (days YYYY-MM-DD, from < to, at most 366 days)' },
  401: { description: 'No valid access token' },
  403: { description: `Neither a user nor a service with ${dashboardPermission}` },
};

/** /dashboards/*: the finance, marketing and sales dashboards of a period, and the reconciliation with crm. */
export function dashboardRoutes(deps: {
  db: Database;
  clock: Clock;
  snapshots: CrmSnapshots;
  access: (permission: string) => Middleware[];
}) {
  const tags = ['Dashboards'];
  const guard = deps.access(dashboardPermission);
  const query = periodQuerySchema;
  return (api: DocumentedRouter): void => {
    api.add(
      {
        method: 'get',
        path: '/dashboards/finance',
        summary:
          'Finance: revenue, refunds, invoices by status, teacher payouts, balance (from the consumed events)',
        tags,
        security: 'bearer',
        query,
        responses: { 200: { description: 'The figures, per currency', schema: financeAnswer }, ...errors },
      },
      ...guard,
      async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await financeDashboard(deps.db, periodQuerySchema.parse(ctx.query), deps.clock.now());
      },
    );
    api.add(
      {
        method: 'get',
        path: '/dashboards/finance/reconciliation',
        summary: "The consumer's totals next to crm's snapshots of the same period, with the differences",
        tags,
        security: 'bearer',
        query,
        responses: {
          200: {
            description:
              'Sales of the period, balance now, teacher payouts of each month starting in the period',
            schema: z.object({
              period,
              sales: reconciled,
              balance: reconciled,
              teacherPayouts: z.array(reconciled.extend({ month: z.string() })),
            }),
          },
          ...errors,
        },
      },
      ...guard,
      async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await reconcilePeriod(deps, periodQuerySchema.parse(ctx.query));
      },
    );
    api.add(
      {
        method: 'get',
        path: '/dashboards/marketing',
        summary: 'Marketing by lead source: leads, deals created, won, lost, amounts won, conversion',
        tags,
        security: 'bearer',
        query,
        responses: {
          200: {
            description: 'One row per lead source, most leads first',
            schema: z.object({
              period,
              sources: z.array(z.object({ source: z.string(), leads: z.int(), ...pipeline })),
            }),
          },
          ...errors,
        },
      },
      ...guard,
      async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await marketingDashboard(deps.db, periodQuerySchema.parse(ctx.query));
      },
    );
    api.add(
      {
        method: 'get',
        path: '/dashboards/sales',
        summary: 'Sales team KPIs by owner: deals created, won, lost, amounts won, conversion',
        tags,
        security: 'bearer',
        query,
        responses: {
          200: {
            description: 'One row per owner, most deals won first, and the team total',
            schema: z.object({
              period,
              owners: z.array(z.object({ ownerId: z.string(), ...pipeline })),
              total: z.object(pipeline),
            }),
          },
          ...errors,
        },
      },
      ...guard,
      async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await salesDashboard(deps.db, periodQuerySchema.parse(ctx.query));
      },
    );
  };
}
