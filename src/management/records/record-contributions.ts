import type { CrmEntity } from '../crm-contract/crm-events.js';
import { firstDayOf, utcDayOf } from '../crm-contract/value-formats.js';

/** The figures the dashboards sum (table crm_daily_totals, column metric). */
export const metrics = {
  leadsCreated: 'leads.created',
  dealsCreatedByOwner: 'deals.created.by_owner',
  dealsCreatedBySource: 'deals.created.by_source',
  dealsWonByOwner: 'deals.won.by_owner',
  dealsWonBySource: 'deals.won.by_source',
  dealsLostByOwner: 'deals.lost.by_owner',
  dealsLostBySource: 'deals.lost.by_source',
  invoicesIssued: 'invoices.issued',
  paymentsSucceeded: 'payments.succeeded',
  paymentsFailed: 'payments.failed',
  refunds: 'refunds',
  entitlementsActivated: 'entitlements.activated',
  entitlementsRevoked: 'entitlements.revoked',
  teacherPayouts: 'teacher_payouts',
} as const;

export type Metric = (typeof metrics)[keyof typeof metrics];

/** What one record adds to one row of the daily totals. */
export interface Contribution {
  metric: Metric;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  /** Owner, lead source or status, by metric; '' when the metric has none. */
  dimension: string;
  /** '' for figures without money (leads, entitlements). */
  currency: string;
  count: number;
  amountMinor: number;
}

type Data = Record<string, unknown>;
const text = (data: Data, field: string) => String(data[field]);
const amount = (data: Data) => Number(data.amountMinor);

/**
 * The one rule of what a crm record counts for, and on which day (docs/crm-contract.md, "What each
 * figure counts"). A record's change moves its contributions: the old ones are taken out, the new ones
 * put in, so the totals always equal the sums over the kept records.
 */
export function contributionsOf(entity: CrmEntity, data: Data): Contribution[] {
  const one = (metric: Metric, instant: unknown, dimension: string, currency = ''): Contribution => ({
    metric,
    day: utcDayOf(String(instant)),
    dimension,
    currency,
    count: 1,
    amountMinor: currency === '' ? 0 : amount(data),
  });
  switch (entity) {
    case 'lead':
      return [one(metrics.leadsCreated, data.createdAt, text(data, 'source'))];
    case 'deal': {
      const currency = text(data, 'currency');
      const owner = text(data, 'ownerId');
      const source = text(data, 'leadSource');
      const figures = [
        one(metrics.dealsCreatedByOwner, data.createdAt, owner, currency),
        one(metrics.dealsCreatedBySource, data.createdAt, source, currency),
      ];
      if (data.status === 'won') {
        figures.push(one(metrics.dealsWonByOwner, data.closedAt, owner, currency));
        figures.push(one(metrics.dealsWonBySource, data.closedAt, source, currency));
      }
      if (data.status === 'lost') {
        figures.push(one(metrics.dealsLostByOwner, data.closedAt, owner, currency));
        figures.push(one(metrics.dealsLostBySource, data.closedAt, source, currency));
      }
      return figures;
    }
    case 'invoice':
      return [one(metrics.invoicesIssued, data.issuedAt, text(data, 'status'), text(data, 'currency'))];
    case 'payment':
      return [
        one(
          data.status === 'succeeded' ? metrics.paymentsSucceeded : metrics.paymentsFailed,
          data.processedAt,
          '',
          text(data, 'currency'),
        ),
      ];
    case 'refund':
      return [one(metrics.refunds, data.createdAt, '', text(data, 'currency'))];
    case 'entitlement': {
      const product = text(data, 'productKey');
      const figures = [one(metrics.entitlementsActivated, data.activatedAt, product)];
      if (data.status === 'revoked') figures.push(one(metrics.entitlementsRevoked, data.revokedAt, product));
      return figures;
    }
    case 'teacher_payout':
      return [
        {
          metric: metrics.teacherPayouts,
          day: firstDayOf(text(data, 'period')),
          dimension: text(data, 'status'),
          currency: text(data, 'currency'),
          count: 1,
          amountMinor: amount(data),
        },
      ];
  }
}

/** Adds contributions into a map of total changes; `sign` -1 takes a record's old figures out. */
export function addContributions(
  into: Map<string, Contribution>,
  contributions: Contribution[],
  sign: 1 | -1,
): void {
  for (const contribution of contributions) {
    const key = `${contribution.metric}\u0000${contribution.day}\u0000${contribution.dimension}\u0000${contribution.currency}`;
    const total = into.get(key);
    if (total) {
      total.count += sign * contribution.count;
      total.amountMinor += sign * contribution.amountMinor;
    } else {
      into.set(key, {
        ...contribution,
        count: sign * contribution.count,
        amountMinor: sign * contribution.amountMinor,
      });
    }
  }
}
