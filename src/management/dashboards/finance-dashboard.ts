import type { Queryable } from '../../db/database.js';
import type { Period } from '../crm-contract/crm-snapshots.js';
import { dailySeries, sumTotals } from '../records/daily-totals-repository.js';
import { metrics } from '../records/record-contributions.js';
import { consumerBalance, monthsStartingIn, type Figure } from './consumer-figures.js';

const zero = (): Figure => ({ count: 0, amountMinor: 0 });

export interface FinanceDashboard {
  period: Period;
  currencies: {
    currency: string;
    revenue: Figure;
    refunds: Figure;
    netRevenueMinor: number;
    failedPayments: Figure;
    invoices: { issued: Figure; paid: Figure; overdue: Figure };
  }[];
  revenueByDay: { day: string; currency: string; amountMinor: number }[];
  teacherPayouts: { month: string; currency: string; approved: Figure; paid: Figure }[];
  balance: Awaited<ReturnType<typeof consumerBalance>>;
}

/**
 * The finance dashboard of a period, from the consumed events: revenue (succeeded payments), refunds,
 * invoices issued in the period by their status now (issued = open, paid, overdue), teacher payouts of
 * the months starting in the period, and the balance now.
 */
export async function financeDashboard(db: Queryable, period: Period, now: Date): Promise<FinanceDashboard> {
  const months = monthsStartingIn(period);
  const [rows, revenueByDay, payoutRows, balance] = await Promise.all([
    sumTotals(
      db,
      [metrics.paymentsSucceeded, metrics.paymentsFailed, metrics.refunds, metrics.invoicesIssued],
      period,
    ),
    dailySeries(db, metrics.paymentsSucceeded, period),
    payoutsByMonth(db, months),
    consumerBalance(db, now),
  ]);
  const currencies = new Map<string, FinanceDashboard['currencies'][number]>();
  const entry = (currency: string) => {
    let found = currencies.get(currency);
    if (!found) {
      found = {
        currency,
        revenue: zero(),
        refunds: zero(),
        netRevenueMinor: 0,
        failedPayments: zero(),
        invoices: { issued: zero(), paid: zero(), overdue: zero() },
      };
      currencies.set(currency, found);
    }
    return found;
  };
  const add = (into: Figure, row: Figure) => {
    into.count += row.count;
    into.amountMinor += row.amountMinor;
  };
  for (const row of rows) {
    const figures = entry(row.currency);
    if (row.metric === metrics.paymentsSucceeded) add(figures.revenue, row);
    if (row.metric === metrics.paymentsFailed) add(figures.failedPayments, row);
    if (row.metric === metrics.refunds) add(figures.refunds, row);
    if (row.metric === metrics.invoicesIssued) {
      const status = row.dimension as keyof FinanceDashboard['currencies'][number]['invoices'];
      if (status in figures.invoices) add(figures.invoices[status], row);
    }
  }
  for (const figures of currencies.values()) {
    figures.netRevenueMinor = figures.revenue.amountMinor - figures.refunds.amountMinor;
  }
  return {
    period,
    currencies: [...currencies.values()].sort((a, b) => a.currency.localeCompare(b.currency)),
    revenueByDay: revenueByDay.map(({ day, currency, amountMinor }) => ({ day, currency, amountMinor })),
    teacherPayouts: payoutRows,
    balance,
  };
}

async function payoutsByMonth(db: Queryable, months: string[]): Promise<FinanceDashboard['teacherPayouts']> {
  if (months.length === 0) return [];
  const last = new Date(`${months.at(-1)}-01T00:00:00Z`);
  last.setUTCMonth(last.getUTCMonth() + 1);
  const { rows } = (await db.raw(
    `select to_char(day, 'YYYY-MM') as month, currency, dimension as status,
            sum(count)::bigint as count, sum(amount_minor)::bigint as amount_minor
       from crm_daily_totals
      where metric = ? and day >= ?::date and day < ?::date
      group by 1, 2, 3 order by 1, 2`,
    [metrics.teacherPayouts, `${months[0]}-01`, last.toISOString().slice(0, 10)],
  )) as { rows: { month: string; currency: string; status: string; count: number; amount_minor: number }[] };
  const result = new Map<string, FinanceDashboard['teacherPayouts'][number]>();
  for (const row of rows) {
    const key = `${row.month} ${row.currency}`;
    const entry = result.get(key) ?? {
      month: row.month,
      currency: row.currency,
      approved: zero(),
      paid: zero(),
    };
    if (row.status === 'approved' || row.status === 'paid') {
      entry[row.status].count += Number(row.count);
      entry[row.status].amountMinor += Number(row.amount_minor);
    }
    result.set(key, entry);
  }
  return [...result.values()];
}
