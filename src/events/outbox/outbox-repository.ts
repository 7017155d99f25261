import type { Queryable } from '../../db/database.js';
import type { Envelope } from '../envelope.js';

/** The pg channel the outbox notifies on commit, so relays of every node wake at once. */
export const outboxChannel = 'event_outbox';

export interface PendingEvent {
  id: number;
  envelope: Envelope;
  orderingKey: string;
  attempts: number;
}

export async function insertOutboxEvent(
  db: Queryable,
  envelope: Envelope,
  orderingKey: string,
  now: Date,
): Promise<void> {
  await db('event_outbox').insert({
    message_id: envelope.messageId,
    message_type: envelope.messageType,
    ordering_key: orderingKey,
    envelope: JSON.stringify(envelope),
    created_at: now,
  });
}

/** NOTIFY inside a transaction is delivered when it commits, and not at all when it rolls back. */
export async function notifyOutbox(db: Queryable): Promise<void> {
  await db.raw('select pg_notify(?, ?)', [outboxChannel, '']);
}

export async function markEventsSent(db: Queryable, ids: number[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await db('event_outbox').whereIn('id', ids).update({ sent_at: now, last_error: null });
}

/**
 * Why publishing an event failed: the connected broker refused it (counted in `attempts`, which its
 * key's growing wait is reckoned from; the key waits until `keyWaitsUntil`), or the broker was away
 * (no verdict on the event: only its error is kept, and the whole relay waits for the broker).
 */
export type PublishFailure =
  { kind: 'refused'; error: string; keyWaitsUntil: Date } | { kind: 'broker away'; error: string };

export async function recordPublishFailure(
  db: Queryable,
  id: number,
  failure: PublishFailure,
): Promise<void> {
  await db('event_outbox')
    .where({ id })
    .update({
      last_error: failure.error.slice(0, 2000),
      ...(failure.kind === 'refused'
        ? { attempts: db.raw('attempts + 1'), next_attempt_at: failure.keyWaitsUntil }
        : { next_attempt_at: null }),
    });
}

/** Sent rows older than `before` are no longer needed (the broker and subscribers have them). */
export async function pruneSentEvents(db: Queryable, before: Date): Promise<number> {
  return db('event_outbox').whereNotNull('sent_at').where('sent_at', '<', before).delete();
}

export async function countPendingEvents(db: Queryable): Promise<number> {
  const row = await db('event_outbox').whereNull('sent_at').first(db.raw('count(*)::int as count'));
  return (row as { count: number } | undefined)?.count ?? 0;
}

/** One relay at a time across all nodes: a transaction-scoped advisory lock on this constant. */
const relayLockKey = 7_403_001;

/**
 * Takes the relay lock for the open transaction and, when it got it, reads the oldest pending events
 * of the keys not waiting for a retry. `locked` is false when another node's relay holds the lock.
 *
 * Two statements on purpose: under READ COMMITTED a statement's snapshot is taken when it starts. Were
 * the lock taken inside the reading statement, a relay could get the lock the moment another relay
 * commits, yet read with a snapshot from before that commit, and publish its events a second time.
 */
export async function lockRelayAndFindPending(
  trx: Queryable,
  limit: number,
  now: Date,
): Promise<{ locked: boolean; events: PendingEvent[] }> {
  const lock = await trx.raw('select pg_try_advisory_xact_lock(?) as locked', [relayLockKey]);
  if (!(lock.rows as { locked: boolean }[])[0]?.locked) return { locked: false, events: [] };
  // A key with a refused event waiting for its next attempt is left out whole: its events keep their
  // order, and can't fill the batch and hold back other keys'.
  const rows: { id: number | string; envelope: Envelope; ordering_key: string; attempts: number }[] =
    await trx('event_outbox as pending')
      .whereNull('pending.sent_at')
      .whereNotExists((waiting) =>
        waiting
          .from('event_outbox as waiting')
          .whereRaw('waiting.ordering_key = pending.ordering_key')
          .whereNull('waiting.sent_at')
          .where('waiting.next_attempt_at', '>', now),
      )
      .orderBy('pending.id')
      .limit(limit)
      .select('pending.id', 'pending.envelope', 'pending.ordering_key', 'pending.attempts');
  return {
    locked: true,
    events: rows.map((row) => ({
      id: Number(row.id),
      envelope: row.envelope,
      orderingKey: row.ordering_key,
      attempts: row.attempts,
    })),
  };
}
