import type { Knex } from 'knex';

/** Each node asks every few seconds which clients changed since its last look (src/oidc/client-cache.ts). */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => table.index(['updated_at']));
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => table.dropIndex(['updated_at']));
}
