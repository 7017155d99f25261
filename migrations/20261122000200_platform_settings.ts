import type { Knex } from 'knex';

/**
 * Platform-owned system settings, key → JSON value (e.g. the auth methods users may enable). Read and
 * written only through src/platform/settings, which knows each key's schema and default.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('platform_settings', (table) => {
    table.string('key', 200).primary();
    table.jsonb('value').notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('platform_settings');
}
