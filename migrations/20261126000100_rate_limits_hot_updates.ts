import type { Knex } from 'knex';

/**
 * Every limited request updates its counter's points and expire. With no index on expire, and room
 * left on each page, PostgreSQL updates the row in place (a HOT update) instead of writing a new
 * index entry each time. The hourly cleanup's `expire < now` scan of this small table needs no index.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('rate_limits', (table) => table.dropIndex(['expire']));
  await db.raw('alter table rate_limits set (fillfactor = 70)');
}

export async function down(db: Knex): Promise<void> {
  await db.raw('alter table rate_limits reset (fillfactor)');
  await db.schema.alterTable('rate_limits', (table) => table.index(['expire']));
}
