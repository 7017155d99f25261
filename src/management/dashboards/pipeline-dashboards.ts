import type { Queryable } from '../../db/database.js';
import type { Period } from '../crm-contract/crm-snapshots.js';
import { sumTotals, type TotalRow } from '../records/daily-totals-repository.js';
import { metrics, type Metric } from '../records/record-contributions.js';

/** One row of a breakdown: deals and their won amounts per currency, by a dimension (owner or source). */
interface PipelineRow {
  dealsCreated: number;
  dealsWon: number;
  dealsLost: number;
  wonAmounts: { currency: string; amountMinor: number }[];
}

function pipelineRows(
  rows: TotalRow[],
  created: Metric,
  won: Metric,
  lost: Metric,
): Map<string, PipelineRow> {
  const result = new Map<string, PipelineRow>();
  const entry = (dimension: string) => {
    let found = result.get(dimension);
    if (!found) {
      found = { dealsCreated: 0, dealsWon: 0, dealsLost: 0, wonAmounts: [] };
      result.set(dimension, found);
    }
    return found;
  };
  for (const row of rows) {
    if (row.metric === created) entry(row.dimension).dealsCreated += row.count;
    if (row.metric === lost) entry(row.dimension).dealsLost += row.count;
    if (row.metric === won) {
      const found = entry(row.dimension);
      found.dealsWon += row.count;
      const amount = found.wonAmounts.find((item) => item.currency === row.currency);
      if (amount) amount.amountMinor += row.amountMinor;
      else found.wonAmounts.push({ currency: row.currency, amountMinor: row.amountMinor });
    }
  }
  for (const found of result.values()) found.wonAmounts.sort((a, b) => a.currency.localeCompare(b.currency));
  return result;
}

const ratio = (part: number, whole: number) =>
  whole === 0 ? null : Math.round((part / whole) * 10_000) / 10_000;

export interface MarketingDashboard {
  period: Period;
  sources: ({ source: string; leads: number; conversion: number | null } & PipelineRow)[];
}

/**
 * Marketing by lead source: leads created in the period, deals created from that source, deals won and
 * lost (by close date) with the amounts won; conversion = deals won / leads (null without leads).
 */
export async function marketingDashboard(db: Queryable, period: Period): Promise<MarketingDashboard> {
  const rows = await sumTotals(
    db,
    [metrics.leadsCreated, metrics.dealsCreatedBySource, metrics.dealsWonBySource, metrics.dealsLostBySource],
    period,
  );
  const pipeline = pipelineRows(
    rows,
    metrics.dealsCreatedBySource,
    metrics.dealsWonBySource,
    metrics.dealsLostBySource,
  );
  const leads = new Map<string, number>();
  for (const row of rows) {
    if (row.metric === metrics.leadsCreated)
      leads.set(row.dimension, (leads.get(row.dimension) ?? 0) + row.count);
  }
  const sources = [...new Set([...leads.keys(), ...pipeline.keys()])].map((source) => {
    const deals = pipeline.get(source) ?? { dealsCreated: 0, dealsWon: 0, dealsLost: 0, wonAmounts: [] };
    const leadCount = leads.get(source) ?? 0;
    return { source, leads: leadCount, ...deals, conversion: ratio(deals.dealsWon, leadCount) };
  });
  sources.sort((a, b) => b.leads - a.leads || a.source.localeCompare(b.source));
  return { period, sources };
}

export interface SalesDashboard {
  period: Period;
  owners: ({ ownerId: string; conversion: number | null } & PipelineRow)[];
  total: PipelineRow & { conversion: number | null };
}

/**
 * Sales team KPIs by owner: deals created (by creation date), won and lost (by close date), amounts won;
 * conversion = won / (won + lost), the share of the deals closed in the period that were won.
 */
export async function salesDashboard(db: Queryable, period: Period): Promise<SalesDashboard> {
  const rows = await sumTotals(
    db,
    [metrics.dealsCreatedByOwner, metrics.dealsWonByOwner, metrics.dealsLostByOwner],
    period,
  );
  const pipeline = pipelineRows(
    rows,
    metrics.dealsCreatedByOwner,
    metrics.dealsWonByOwner,
    metrics.dealsLostByOwner,
  );
  const owners = [...pipeline.entries()]
    .map(([ownerId, row]) => ({
      ownerId,
      ...row,
      conversion: ratio(row.dealsWon, row.dealsWon + row.dealsLost),
    }))
    .sort((a, b) => b.dealsWon - a.dealsWon || a.ownerId.localeCompare(b.ownerId));
  const all = pipelineRows(
    rows.map((row) => ({ ...row, dimension: '' })),
    metrics.dealsCreatedByOwner,
    metrics.dealsWonByOwner,
    metrics.dealsLostByOwner,
  ).get('') ?? { dealsCreated: 0, dealsWon: 0, dealsLost: 0, wonAmounts: [] };
  return { period, owners, total: { ...all, conversion: ratio(all.dealsWon, all.dealsWon + all.dealsLost) } };
}
