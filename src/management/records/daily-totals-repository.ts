import type { Queryable } from '../../db/database.js';
import type { Contribution, Metric } from './record-contributions.js';

/**
 * Adds changes to the daily totals and to the all-time totals, one statement each (rows that net to
 * nothing are left out).
 */
export async function applyTotalChanges(db: Queryable, changes: Iterable<Contribution>): Promise<void> {
  const rows = [...changes].filter((change) => change.count !== 0 || change.amountMinor !== 0);
  if (rows.length === 0) return;
  const allTime = new Map<
    string,
    { metric: string; dimension: string; currency: string; count: number; amountMinor: number }
  >();
  for (const row of rows) {
    const key = `${row.metric}\u0000${row.dimension}\u0000${row.currency}`;
    const sum = allTime.get(key) ?? { ...row, count: 0, amountMinor: 0 };
    sum.count += row.count;
    sum.amountMinor += row.amountMinor;
    allTime.set(key, sum);
  }
  const sums = [...allTime.values()];
  await db.raw(
    `insert into crm_all_time_totals (metric, dimension, currency, count, amount_minor)
     select * from unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[])
     on conflict (metric, dimension, currency) do update set
       count = crm_all_time_totals.count + excluded.count,
       amount_minor = crm_all_time_totals.amount_minor + excluded.amount_minor`,
    [
      sums.map((sum) => sum.metric),
      sums.map((sum) => sum.dimension),
      sums.map((sum) => sum.currency),
      sums.map((sum) => sum.count),
      sums.map((sum) => sum.amountMinor),
    ],
  );
  // One row per key in a statement (ON CONFLICT can't touch a row twice); the caller merged them.
  await db.raw(
    `insert into crm_daily_totals (metric, day, dimension, currency, count, amount_minor)
     select * from unnest(?::text[], ?::date[], ?::text[], ?::text[], ?::bigint[], ?::bigint[])
     on conflict (metric, day, dimension, currency) do update set
       count = crm_daily_totals.count + excluded.count,
       amount_minor = crm_daily_totals.amount_minor + excluded.amount_minor`,
    [
      rows.map((row) => row.metric),
      rows.map((row) => row.day),
      rows.map((row) => row.dimension),
      rows.map((row) => row.currency),
      rows.map((row) => row.count),
      rows.map((row) => row.amountMinor),
    ],
  );
}

export interface TotalRow {
  metric: Metric;
  dimension: string;
  currency: string;
  count: number;
  amountMinor: number;
}

/**
 * Sums of the metrics over UTC days `from` ≤ day < `to`, per metric, dimension and currency: one index
 * range scan per metric (the primary key starts with metric, day). Without a period: the all-time
 * totals, a few rows.
 */
export async function sumTotals(
  db: Queryable,
  metricList: readonly Metric[],
  period?: { from: string; to: string },
): Promise<TotalRow[]> {
  if (!period) {
    const { rows } = (await db.raw(
      `select metric, dimension, currency, count, amount_minor from crm_all_time_totals
        where metric = any(?::text[]) and (count <> 0 or amount_minor <> 0)
        order by metric, dimension, currency`,
      [[...metricList]],
    )) as {
      rows: { metric: Metric; dimension: string; currency: string; count: number; amount_minor: number }[];
    };
    return rows.map((row) => ({
      metric: row.metric,
      dimension: row.dimension,
      currency: row.currency,
      count: Number(row.count),
      amountMinor: Number(row.amount_minor),
    }));
  }
  const { rows } = (await db.raw(
    `select metric, dimension, currency, sum(count)::bigint as count, sum(amount_minor)::bigint as amount_minor
       from crm_daily_totals
      where metric = any(?::text[]) and day >= ?::date and day < ?::date
      group by metric, dimension, currency
      order by metric, dimension, currency`,
    [[...metricList], period.from, period.to],
  )) as {
    rows: { metric: Metric; dimension: string; currency: string; count: number; amount_minor: number }[];
  };
  return rows.map((row) => ({
    metric: row.metric,
    dimension: row.dimension,
    currency: row.currency,
    count: Number(row.count),
    amountMinor: Number(row.amount_minor),
  }));
}

/** Per-day sums of one metric (chart series), per currency. */
export async function dailySeries(
  db: Queryable,
  metric: Metric,
  period: { from: string; to: string },
): Promise<{ day: string; currency: string; count: number; amountMinor: number }[]> {
  const { rows } = (await db.raw(
    `select to_char(day, 'YYYY-MM-DD') as day, currency, sum(count)::bigint as count,
            sum(amount_minor)::bigint as amount_minor
       from crm_daily_totals
      where metric = ? and day >= ?::date and day < ?::date
      group by day, currency
      order by day, currency`,
    [metric, period.from, period.to],
  )) as { rows: { day: string; currency: string; count: number; amount_minor: number }[] };
  return rows.map((row) => ({
    day: row.day,
    currency: row.currency,
    count: Number(row.count),
    amountMinor: Number(row.amount_minor),
  }));
}
