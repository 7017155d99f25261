import type { Queryable } from '../../db/database.js';

export type SnapshotKind = 'sales' | 'balance' | 'teacher_payouts';

export interface StoredSnapshot<Body> {
  fetchedAt: Date;
  body: Body;
}

/** The last successful answer of a crm read for a period (table crm_snapshots). */
export async function loadSnapshot<Body>(
  db: Queryable,
  kind: SnapshotKind,
  periodKey: string,
): Promise<StoredSnapshot<Body> | undefined> {
  const row = await db('crm_snapshots').where({ kind, period_key: periodKey }).first('fetched_at', 'body');
  return row ? { fetchedAt: new Date(row.fetched_at), body: row.body as Body } : undefined;
}

export async function saveSnapshot(
  db: Queryable,
  kind: SnapshotKind,
  periodKey: string,
  body: unknown,
  fetchedAt: Date,
): Promise<void> {
  await db('crm_snapshots')
    .insert({ kind, period_key: periodKey, fetched_at: fetchedAt, body: JSON.stringify(body) })
    .onConflict(['kind', 'period_key'])
    .merge(['fetched_at', 'body']);
}
