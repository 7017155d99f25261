import type { Knex } from 'knex';

/**
 * Clients deleted recently. Every node keeps the clients it looked up and drops one when the change
 * feed (oauth_clients.updated_at) reports it; a deleted row reports nothing, so other nodes kept using
 * a deleted client (its secret, its tokens) for up to ten minutes. The deletion is written here for
 * the feed to read; the hourly cleanup removes rows no cache can still be holding.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('deleted_oauth_clients', (table) => {
    table.string('client_id', 100).primary();
    table.timestamp('deleted_at', { useTz: true }).notNullable().defaultTo(db.fn.now()).index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('deleted_oauth_clients');
}
