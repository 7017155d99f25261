import type { Queryable } from '../../db/database.js';
import type { ReferenceEntity } from '../events/platform-events.js';
import { fieldsOf, type ReferenceEntry } from './entities.js';
import type { LocalizedText } from './localized-text.js';

/** A row of reference_data_entries: the union of every entity's fields. */
export interface ReferenceRow {
  entity: ReferenceEntity;
  key: string;
  title: LocalizedText;
  description: LocalizedText | null;
  parent_key: string | null;
  display_order: number;
  is_active: boolean;
  min_grade: number | null;
  max_grade: number | null;
  min_age: number | null;
  max_age: number | null;
  deleted_at: Date | null;
}

/** The columns a change may write (jsonb values already serialised). */
export type ReferenceColumns = Partial<Omit<ReferenceRow, 'entity' | 'key' | 'deleted_at'>>;

export interface ListFilter {
  isActive?: boolean | undefined;
  parentKey?: string | undefined;
}

const table = 'reference_data_entries';

/** The entry as the API answers it: only the fields of its entity. */
export function toEntry(row: ReferenceRow): ReferenceEntry {
  const entry: Record<string, unknown> = {};
  for (const field of fieldsOf(row.entity)) entry[field] = row[field as keyof ReferenceRow];
  return entry as ReferenceEntry;
}

/** Live entries of an entity (tombstones excluded), in display order, then by key. */
export async function listEntries(db: Queryable, entity: ReferenceEntity): Promise<ReferenceRow[]> {
  return db(table)
    .where({ entity })
    .whereNull('deleted_at')
    .orderBy([
      { column: 'display_order', order: 'asc' },
      { column: 'key', order: 'asc' },
    ])
    .select('*');
}

/** The row (tombstones included), locked against concurrent changes until the transaction ends. */
export async function lockEntry(
  trx: Queryable,
  entity: ReferenceEntity,
  key: string,
  mode: 'update' | 'share',
): Promise<ReferenceRow | undefined> {
  const query = trx(table).where({ entity, key }).first<ReferenceRow | undefined>('*');
  return mode === 'update' ? query.forUpdate() : query.forShare();
}

export async function findEntry(
  db: Queryable,
  entity: ReferenceEntity,
  key: string,
): Promise<ReferenceRow | undefined> {
  return db(table).where({ entity, key }).first('*');
}

/** Inserts unless the key is taken (live or tombstone); undefined when taken. */
export async function insertEntry(
  trx: Queryable,
  entity: ReferenceEntity,
  key: string,
  columns: ReferenceColumns,
  now: Date,
): Promise<ReferenceRow | undefined> {
  const [row] = await trx(table)
    .insert({ ...serialise(columns), entity, key, created_at: now, updated_at: now })
    .onConflict(['entity', 'key'])
    .ignore()
    .returning('*');
  return row as ReferenceRow | undefined;
}

export async function updateEntry(
  trx: Queryable,
  entity: ReferenceEntity,
  key: string,
  columns: ReferenceColumns,
  now: Date,
): Promise<ReferenceRow> {
  const [row] = await trx(table)
    .where({ entity, key })
    .update({ ...serialise(columns), updated_at: now })
    .returning('*');
  return row as ReferenceRow;
}

/** Leaves a tombstone: the key stays taken forever, the entry leaves every list. */
export async function markEntryDeleted(
  trx: Queryable,
  entity: ReferenceEntity,
  key: string,
  now: Date,
): Promise<void> {
  await trx(table).where({ entity, key }).update({ deleted_at: now, is_active: false, updated_at: now });
}

/** Live subjects whose parent is this subject. */
export async function countChildSubjects(db: Queryable, key: string): Promise<number> {
  const row = await db(table)
    .where({ entity: 'subject', parent_key: key })
    .whereNull('deleted_at')
    .first(db.raw('count(*)::int as count'));
  return (row as { count: number } | undefined)?.count ?? 0;
}

/** The keys above a subject, nearest first (the chain of parent_key). */
export async function ancestorKeys(db: Queryable, key: string): Promise<string[]> {
  const result = await db.raw(
    `with recursive chain(key, parent_key, depth) as (
       select key, parent_key, 0 from reference_data_entries where entity = 'subject' and key = ?
       union all
       select e.key, e.parent_key, chain.depth + 1
         from reference_data_entries e join chain on e.entity = 'subject' and e.key = chain.parent_key
        where chain.depth < 1000
     )
     select key from chain order by depth`,
    [key],
  );
  return (result.rows as { key: string }[]).map((row) => row.key);
}

function serialise(columns: ReferenceColumns): Record<string, unknown> {
  const values: Record<string, unknown> = { ...columns };
  if (columns.title !== undefined) values.title = JSON.stringify(columns.title);
  if (columns.description !== undefined) {
    values.description = columns.description === null ? null : JSON.stringify(columns.description);
  }
  return values;
}
