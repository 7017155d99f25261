import type { Queryable } from '../../db/database.js';
import type { CrmEntity } from '../crm-contract/crm-events.js';

/** A crm record as kept: the newest version seen of it. */
export interface CrmRecord {
  entity: CrmEntity;
  recordId: string;
  status: string;
  version: number;
  occurredAt: string;
  messageId: string;
  data: Record<string, unknown>;
}

interface RecordRow {
  entity: CrmEntity;
  record_id: string;
  status: string;
  version: number;
  occurred_at: Date;
  message_id: string;
  data: Record<string, unknown>;
}

export const recordKey = (entity: string, recordId: string) => `${entity}\u0000${recordId}`;

/** The kept records of these keys, by `recordKey`. */
export async function findRecords(
  db: Queryable,
  keys: { entity: CrmEntity; recordId: string }[],
): Promise<Map<string, CrmRecord>> {
  if (keys.length === 0) return new Map();
  const { rows } = (await db.raw(
    `select r.entity, r.record_id, r.status, r.version, r.occurred_at, r.message_id, r.data
       from crm_records r
       join unnest(?::text[], ?::text[]) as k(entity, record_id)
         on r.entity = k.entity and r.record_id = k.record_id`,
    [keys.map((key) => key.entity), keys.map((key) => key.recordId)],
  )) as { rows: RecordRow[] };
  return new Map(
    rows.map((row) => [
      recordKey(row.entity, row.record_id),
      {
        entity: row.entity,
        recordId: row.record_id,
        status: row.status,
        version: Number(row.version),
        occurredAt: new Date(row.occurred_at).toISOString(),
        messageId: row.message_id,
        data: row.data,
      },
    ]),
  );
}

/**
 * Writes records in one statement. The version guard is the contract's rule, repeated in SQL: a row
 * is only ever replaced by a greater version.
 */
export async function upsertRecords(db: Queryable, records: CrmRecord[], receivedAt: Date): Promise<void> {
  if (records.length === 0) return;
  await db.raw(
    `insert into crm_records (entity, record_id, status, version, occurred_at, received_at, message_id, data)
     select entity, record_id, status, version, occurred_at, ?::timestamptz, message_id, data
       from unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::timestamptz[], ?::uuid[], ?::jsonb[])
         as r(entity, record_id, status, version, occurred_at, message_id, data)
     on conflict (entity, record_id) do update set
       status = excluded.status, version = excluded.version, occurred_at = excluded.occurred_at,
       received_at = excluded.received_at, message_id = excluded.message_id, data = excluded.data
     where crm_records.version < excluded.version`,
    [
      receivedAt,
      records.map((record) => record.entity),
      records.map((record) => record.recordId),
      records.map((record) => record.status),
      records.map((record) => record.version),
      records.map((record) => record.occurredAt),
      records.map((record) => record.messageId),
      records.map((record) => JSON.stringify(record.data)),
    ],
  );
}
