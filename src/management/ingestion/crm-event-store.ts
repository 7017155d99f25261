import type { Queryable } from '../../db/database.js';
import type { ValidCrmMessage } from './classify-crm-message.js';

/**
 * The inbox and event store (table crm_events): a message is inserted once; what the insert did not
 * return was there already (a duplicate). Called in the transaction of the effects, so "stored" and
 * "applied" are one fact: a crash before the commit leaves neither.
 */
export async function storeNewEvents(
  db: Queryable,
  messages: ValidCrmMessage[],
  receivedAt: Date,
): Promise<Set<string>> {
  if (messages.length === 0) return new Set();
  const { rows } = (await db.raw(
    `insert into crm_events (message_id, message_type, record_id, version, occurred_at, received_at, envelope)
     select message_id, message_type, record_id, version, occurred_at, ?::timestamptz, envelope
       from unnest(?::uuid[], ?::text[], ?::text[], ?::bigint[], ?::timestamptz[], ?::jsonb[])
         as m(message_id, message_type, record_id, version, occurred_at, envelope)
     on conflict (message_id) do nothing
     returning message_id`,
    [
      receivedAt,
      messages.map((message) => message.messageId),
      messages.map((message) => message.messageType),
      messages.map((message) => message.recordId),
      messages.map((message) => message.version),
      messages.map((message) => message.occurredAt),
      messages.map((message) => JSON.stringify(message.envelope)),
    ],
  )) as { rows: { message_id: string }[] };
  return new Set(rows.map((row) => row.message_id));
}

/** Which of these message ids the store holds (a dead letter redelivered after its replay). */
export async function storedMessageIds(db: Queryable, messageIds: string[]): Promise<Set<string>> {
  if (messageIds.length === 0) return new Set();
  const { rows } = (await db.raw(`select message_id from crm_events where message_id = any(?::uuid[])`, [
    messageIds,
  ])) as { rows: { message_id: string }[] };
  return new Set(rows.map((row) => row.message_id));
}
