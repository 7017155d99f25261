import type { Queryable } from '../../db/database.js';
import type { DeadLetterMessage, DeadLetterReason } from './classify-crm-message.js';

/** A message kept aside (table crm_dead_letters): what it was, why, when it came. */
export interface DeadLetter {
  messageId: string;
  messageType: string;
  reason: DeadLetterReason;
  detail: string;
  envelope: Record<string, unknown>;
  firstSeenAt: Date;
  lastSeenAt: Date;
  timesSeen: number;
  replayedAt: Date | null;
  replayOutcome: string | null;
}

interface DeadLetterRow {
  message_id: string;
  message_type: string;
  reason: DeadLetterReason;
  detail: string;
  envelope: Record<string, unknown>;
  first_seen_at: Date;
  last_seen_at: Date;
  times_seen: number;
  replayed_at: Date | null;
  replay_outcome: string | null;
}

const toDeadLetter = (row: DeadLetterRow): DeadLetter => ({
  messageId: row.message_id,
  messageType: row.message_type,
  reason: row.reason,
  detail: row.detail,
  envelope: row.envelope,
  firstSeenAt: new Date(row.first_seen_at),
  lastSeenAt: new Date(row.last_seen_at),
  timesSeen: Number(row.times_seen),
  replayedAt: row.replayed_at ? new Date(row.replayed_at) : null,
  replayOutcome: row.replay_outcome,
});

/**
 * Records dead letters; one seen again (a redelivery, a duplicate) only moves its last-seen time and
 * count, and takes the latest reason (the rules may have changed in between).
 */
export async function recordDeadLetters(
  db: Queryable,
  letters: DeadLetterMessage[],
  now: Date,
): Promise<void> {
  const unique = new Map<string, { letter: DeadLetterMessage; times: number }>();
  for (const letter of letters) {
    const seen = unique.get(letter.messageId);
    if (seen) seen.times += 1;
    else unique.set(letter.messageId, { letter, times: 1 });
  }
  if (unique.size === 0) return;
  const entries = [...unique.values()];
  await db.raw(
    `insert into crm_dead_letters (message_id, message_type, reason, detail, envelope, first_seen_at, last_seen_at, times_seen)
     select message_id, message_type, reason, detail, envelope, ?::timestamptz, ?::timestamptz, times
       from unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::int[])
         as d(message_id, message_type, reason, detail, envelope, times)
     on conflict (message_id) do update set
       reason = excluded.reason, detail = excluded.detail, last_seen_at = excluded.last_seen_at,
       times_seen = crm_dead_letters.times_seen + excluded.times_seen`,
    [
      now,
      now,
      entries.map(({ letter }) => letter.messageId),
      entries.map(({ letter }) => letter.messageType.slice(0, 100)),
      entries.map(({ letter }) => letter.reason),
      entries.map(({ letter }) => letter.detail.slice(0, 2000)),
      entries.map(({ letter }) => JSON.stringify(letter.envelope)),
      entries.map(({ times }) => times),
    ],
  );
}

export async function listDeadLetters(
  db: Queryable,
  query: { includeReplayed?: boolean; reason?: string; limit?: number } = {},
): Promise<DeadLetter[]> {
  const builder = db<DeadLetterRow>('crm_dead_letters')
    .orderBy('first_seen_at')
    .orderBy('message_id')
    .limit(query.limit ?? 100);
  if (!query.includeReplayed) builder.whereNull('replayed_at');
  if (query.reason) builder.where('reason', query.reason);
  return (await builder).map(toDeadLetter);
}

export async function findDeadLetter(db: Queryable, messageId: string): Promise<DeadLetter | undefined> {
  const row = await db<DeadLetterRow>('crm_dead_letters').where({ message_id: messageId }).first();
  return row ? toDeadLetter(row) : undefined;
}

export async function countPendingDeadLetters(db: Queryable): Promise<number> {
  const { rows } = (await db.raw(
    `select count(*)::int as count from crm_dead_letters where replayed_at is null`,
  )) as { rows: { count: number }[] };
  return rows[0]?.count ?? 0;
}

/** Marks dead letters as replayed (`applied`: taken in; `duplicate`: the store had it already). */
export async function markReplayed(
  db: Queryable,
  outcomes: { messageId: string; outcome: 'applied' | 'duplicate' }[],
  now: Date,
): Promise<void> {
  for (const { messageId, outcome } of outcomes) {
    await db('crm_dead_letters')
      .where({ message_id: messageId })
      .update({ replayed_at: now, replay_outcome: outcome });
  }
}
