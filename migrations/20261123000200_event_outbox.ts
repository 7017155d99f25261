import type { Knex } from 'knex';

/**
 * The transactional outbox: an event row is inserted in the same transaction as the change it
 * describes, and the relay publishes pending rows (sent_at null) in id order, then marks them sent.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`
    create table event_outbox (
      id bigserial primary key,
      message_id uuid not null unique,
      message_type varchar(200) not null,
      -- What the event is about (e.g. "subject:algebra"): changes of one key are published in order.
      ordering_key varchar(300) not null,
      envelope jsonb not null,
      created_at timestamptz not null default now(),
      sent_at timestamptz null,
      attempts integer not null default 0,
      last_error text null
    )
  `);
  // The relay's query: the oldest pending rows.
  await db.raw(`create index event_outbox_pending on event_outbox (id) where sent_at is null`);
  // Pruning sent rows by age.
  await db.raw(`create index event_outbox_sent_at on event_outbox (sent_at) where sent_at is not null`);
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('event_outbox');
}
