import type { Knex } from 'knex';

/**
 * When the relay may try a refused event again. Until then the event's ordering key waits: its pending
 * events are left out of the relay's batches (on every node), and other keys' events go on. Null for
 * an event never refused.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`alter table event_outbox add column next_attempt_at timestamptz null`);
  // The relay asks, for each pending event, whether an event of its key is waiting.
  await db.raw(
    `create index event_outbox_waiting on event_outbox (ordering_key, next_attempt_at)
      where sent_at is null and next_attempt_at is not null`,
  );
}

export async function down(db: Knex): Promise<void> {
  await db.raw('drop index if exists event_outbox_waiting');
  await db.raw('alter table event_outbox drop column next_attempt_at');
}
