import type { Queryable } from '../../db/database.js';
import type {
  BalanceAggregate,
  Period,
  SalesAggregate,
  TeacherPayouts,
} from '../crm-contract/crm-snapshots.js';
import { firstDayOf } from '../crm-contract/value-formats.js';
import { sumTotals, type TotalRow } from '../records/daily-totals-repository.js';
import { metrics } from '../records/record-contributions.js';

/**
 * The consumer's own figures in the shapes of crm's snapshots (same definitions: docs/crm-contract.md,
 * "What each figure counts"), computed from the daily totals, so the two can be compared figure by figure.
 */

export interface Figure {
  count: number;
  amountMinor: number;
}

const zero = (): Figure => ({ count: 0, amountMinor: 0 });

/** Per currency, the sum of the rows that `pick` selects. */
function byCurrency(rows: TotalRow[], pick: (row: TotalRow) => boolean): Map<string, Figure> {
  const sums = new Map<string, Figure>();
  for (const row of rows) {
    if (!pick(row)) continue;
    const sum = sums.get(row.currency) ?? zero();
    sum.count += row.count;
    sum.amountMinor += row.amountMinor;
    sums.set(row.currency, sum);
  }
  return sums;
}

const countOf = (rows: TotalRow[], metric: string) =>
  rows.filter((row) => row.metric === metric).reduce((sum, row) => sum + row.count, 0);

const currenciesOf = (...maps: Map<string, Figure>[]) =>
  [...new Set(maps.flatMap((map) => [...map.keys()]))].filter((currency) => currency !== '').sort();

export async function consumerSales(db: Queryable, period: Period, now: Date): Promise<SalesAggregate> {
  const rows = await sumTotals(
    db,
    [
      metrics.leadsCreated,
      metrics.dealsCreatedByOwner,
      metrics.dealsWonByOwner,
      metrics.dealsLostByOwner,
      metrics.invoicesIssued,
      metrics.paymentsSucceeded,
      metrics.refunds,
    ],
    period,
  );
  const invoices = byCurrency(rows, (row) => row.metric === metrics.invoicesIssued);
  const payments = byCurrency(rows, (row) => row.metric === metrics.paymentsSucceeded);
  const refunds = byCurrency(rows, (row) => row.metric === metrics.refunds);
  const won = byCurrency(rows, (row) => row.metric === metrics.dealsWonByOwner);
  return {
    from: period.from,
    to: period.to,
    generatedAt: now.toISOString(),
    leads: { created: countOf(rows, metrics.leadsCreated) },
    deals: {
      created: countOf(rows, metrics.dealsCreatedByOwner),
      won: countOf(rows, metrics.dealsWonByOwner),
      lost: countOf(rows, metrics.dealsLostByOwner),
    },
    currencies: currenciesOf(invoices, payments, refunds, won).map((currency) => ({
      currency,
      invoicesIssued: invoices.get(currency) ?? zero(),
      paymentsSucceeded: payments.get(currency) ?? zero(),
      refunds: refunds.get(currency) ?? zero(),
      dealsWon: won.get(currency) ?? zero(),
    })),
  };
}

export async function consumerBalance(db: Queryable, now: Date): Promise<BalanceAggregate> {
  const rows = await sumTotals(db, [
    metrics.paymentsSucceeded,
    metrics.refunds,
    metrics.teacherPayouts,
    metrics.invoicesIssued,
  ]);
  const received = byCurrency(rows, (row) => row.metric === metrics.paymentsSucceeded);
  const refunded = byCurrency(rows, (row) => row.metric === metrics.refunds);
  const payoutsPaid = byCurrency(
    rows,
    (row) => row.metric === metrics.teacherPayouts && row.dimension === 'paid',
  );
  const outstanding = byCurrency(
    rows,
    (row) =>
      row.metric === metrics.invoicesIssued && (row.dimension === 'issued' || row.dimension === 'overdue'),
  );
  const overdue = byCurrency(
    rows,
    (row) => row.metric === metrics.invoicesIssued && row.dimension === 'overdue',
  );
  const amount = (map: Map<string, Figure>, currency: string) => map.get(currency)?.amountMinor ?? 0;
  return {
    asOf: now.toISOString(),
    currencies: currenciesOf(received, refunded, payoutsPaid, outstanding).map((currency) => ({
      currency,
      receivedMinor: amount(received, currency),
      refundedMinor: amount(refunded, currency),
      payoutsPaidMinor: amount(payoutsPaid, currency),
      netMinor: amount(received, currency) - amount(refunded, currency) - amount(payoutsPaid, currency),
      outstandingMinor: amount(outstanding, currency),
      overdueMinor: amount(overdue, currency),
    })),
  };
}

/** Teacher payouts of a month, totals only (crm's answer also lists the items). */
export async function consumerTeacherPayouts(
  db: Queryable,
  month: string,
  now: Date,
): Promise<Omit<TeacherPayouts, 'items'>> {
  const day = firstDayOf(month);
  const next = new Date(`${day}T00:00:00Z`);
  next.setUTCMonth(next.getUTCMonth() + 1);
  const rows = await sumTotals(db, [metrics.teacherPayouts], {
    from: day,
    to: next.toISOString().slice(0, 10),
  });
  const approved = byCurrency(rows, (row) => row.dimension === 'approved');
  const paid = byCurrency(rows, (row) => row.dimension === 'paid');
  return {
    period: month,
    generatedAt: now.toISOString(),
    currencies: currenciesOf(approved, paid).map((currency) => ({
      currency,
      approved: approved.get(currency) ?? zero(),
      paid: paid.get(currency) ?? zero(),
    })),
  };
}

/** The months `YYYY-MM` whose first day lies in the period. */
export function monthsStartingIn(period: Period): string[] {
  const months: string[] = [];
  const cursor = new Date(`${period.from.slice(0, 7)}-01T00:00:00Z`);
  if (cursor.toISOString().slice(0, 10) < period.from) cursor.setUTCMonth(cursor.getUTCMonth() + 1);
  while (cursor.toISOString().slice(0, 10) < period.to) {
    months.push(cursor.toISOString().slice(0, 7));
    cursor.setUTCMonth(cursor.getUTCMonth() + 1);
  }
  return months;
}
