import type { Clock } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import type { Period } from '../crm-contract/crm-snapshots.js';
import type { CrmSnapshots, SnapshotView } from '../snapshots/crm-snapshots.js';
import {
  consumerBalance,
  consumerSales,
  consumerTeacherPayouts,
  monthsStartingIn,
} from './consumer-figures.js';

/** One figure seen by both sides: what the consumed events add up to, what crm's snapshot says. */
export interface FigureDifference {
  figure: string;
  currency: string | null;
  consumer: number;
  snapshot: number;
  /** consumer − snapshot. */
  difference: number;
}

export interface Reconciled<Body> {
  snapshot: SnapshotView<Body>;
  /** matched: every figure equal; differs: some differ (see differences); no_snapshot: nothing to compare. */
  status: 'matched' | 'differs' | 'no_snapshot';
  differences: FigureDifference[];
}

/** Flattens an answer into figure name → value, per currency (`currencies[]` entries), numbers only. */
function flatten(body: Record<string, unknown>): Map<string, { currency: string | null; value: number }> {
  const figures = new Map<string, { currency: string | null; value: number }>();
  const walk = (value: unknown, path: string, currency: string | null) => {
    if (typeof value === 'number') figures.set(`${currency ?? ''}|${path}`, { currency, value });
    else if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) walk(inner, path ? `${path}.${key}` : key, currency);
    }
  };
  for (const [key, value] of Object.entries(body)) {
    if (key === 'currencies' && Array.isArray(value)) {
      for (const entry of value as Record<string, unknown>[]) {
        const { currency, ...rest } = entry;
        walk(rest, '', String(currency));
      }
    } else if (key !== 'items') walk(value, key, null);
  }
  return figures;
}

export function compareFigures(
  consumer: Record<string, unknown>,
  snapshot: Record<string, unknown>,
): FigureDifference[] {
  const ours = flatten(consumer);
  const theirs = flatten(snapshot);
  const keys = [...new Set([...ours.keys(), ...theirs.keys()])].sort();
  return keys.map((key) => {
    const figure = key.slice(key.indexOf('|') + 1);
    const currency = ours.get(key)?.currency ?? theirs.get(key)?.currency ?? null;
    const mine = ours.get(key)?.value ?? 0;
    const crm = theirs.get(key)?.value ?? 0;
    return { figure, currency, consumer: mine, snapshot: crm, difference: mine - crm };
  });
}

function reconcile<Body extends Record<string, unknown>>(
  consumer: Record<string, unknown>,
  snapshot: SnapshotView<Body>,
): Reconciled<Body> {
  if (snapshot.status !== 'fresh' && snapshot.status !== 'stale') {
    return { snapshot, status: 'no_snapshot', differences: [] };
  }
  const differences = compareFigures(consumer, snapshot.body);
  return {
    snapshot,
    status: differences.every((row) => row.difference === 0) ? 'matched' : 'differs',
    differences,
  };
}

/**
 * The consumer's totals next to crm's snapshots of the same period (sales of the period, the balance
 * now, the teacher payouts of each month starting in the period), with the differences.
 */
export async function reconcilePeriod(
  deps: { db: Queryable; clock: Clock; snapshots: CrmSnapshots },
  period: Period,
) {
  const now = deps.clock.now();
  const months = monthsStartingIn(period);
  const [salesSnapshot, balanceSnapshot, payoutSnapshots] = await Promise.all([
    deps.snapshots.sales(period),
    deps.snapshots.balance(),
    Promise.all(months.map((month) => deps.snapshots.teacherPayouts(month))),
  ]);
  const sales = await consumerSales(deps.db, period, now);
  const balance = await consumerBalance(deps.db, now);
  const payouts = await Promise.all(months.map((month) => consumerTeacherPayouts(deps.db, month, now)));
  return {
    period,
    sales: reconcile(sales, salesSnapshot),
    balance: reconcile(balance, balanceSnapshot),
    teacherPayouts: months.map((month, index) => ({
      month,
      ...reconcile(payouts[index]!, payoutSnapshots[index]!),
    })),
  };
}
