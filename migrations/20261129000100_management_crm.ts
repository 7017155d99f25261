import type { Knex } from 'knex';

/**
 * Management's side of the crm contract (docs/management.md): the event store that de-duplicates by
 * messageId, the crm records kept at their newest version, the daily totals the dashboards read, the
 * dead letters, the last snapshot of each crm read. Financial facts and events are kept 7 years.
 */
export async function up(db: Knex): Promise<void> {
  // Every crm message applied (or found older than what was kept): the inbox and the event store.
  await db.raw(`
    create table crm_events (
      message_id uuid primary key,
      message_type varchar(100) not null,
      record_id varchar(100) not null,
      version bigint not null,
      occurred_at timestamptz not null,
      received_at timestamptz not null,
      envelope jsonb not null
    )
  `);
  await db.raw(`create index crm_events_occurred_at on crm_events (occurred_at)`);

  // One row per crm record (lead, deal, invoice, payment, refund, entitlement, payroll item): the
  // record of the greatest version seen; the message that brought it.
  await db.raw(`
    create table crm_records (
      entity varchar(20) not null,
      record_id varchar(100) not null,
      status varchar(40) not null,
      version bigint not null,
      occurred_at timestamptz not null,
      received_at timestamptz not null,
      message_id uuid not null,
      data jsonb not null,
      primary key (entity, record_id)
    )
  `);
  await db.raw(`create index crm_records_occurred_at on crm_records (occurred_at)`);

  // Sums of the kept records per day (UTC), figure, dimension (owner, source, status) and currency,
  // changed in the same transaction as the records: the dashboards read these, never the records.
  await db.raw(`
    create table crm_daily_totals (
      metric varchar(40) not null,
      day date not null,
      dimension varchar(120) not null default '',
      currency varchar(3) not null default '',
      count bigint not null,
      amount_minor bigint not null,
      primary key (metric, day, dimension, currency)
    )
  `);

  await db.raw(`
    create table crm_dead_letters (
      message_id uuid primary key,
      message_type varchar(100) not null,
      reason varchar(40) not null,
      detail text not null,
      envelope jsonb not null,
      first_seen_at timestamptz not null,
      last_seen_at timestamptz not null,
      times_seen integer not null default 1,
      replayed_at timestamptz null,
      replay_outcome varchar(20) null
    )
  `);
  await db.raw(
    `create index crm_dead_letters_pending on crm_dead_letters (first_seen_at) where replayed_at is null`,
  );

  // The last successful answer of each crm read, per period.
  await db.raw(`
    create table crm_snapshots (
      kind varchar(20) not null,
      period_key varchar(30) not null,
      fetched_at timestamptz not null,
      body jsonb not null,
      primary key (kind, period_key)
    )
  `);

  await db('permissions')
    .insert({ key: 'management.metrics.read', description: 'Read the management metrics (Prometheus)' })
    .onConflict('key')
    .ignore();
}

export async function down(db: Knex): Promise<void> {
  for (const table of [
    'crm_snapshots',
    'crm_dead_letters',
    'crm_daily_totals',
    'crm_records',
    'crm_events',
  ]) {
    await db.schema.dropTableIfExists(table);
  }
  await db('permissions').where({ key: 'management.metrics.read' }).delete();
}
