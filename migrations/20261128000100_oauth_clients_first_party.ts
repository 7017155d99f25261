import type { Knex } from 'knex';

/**
 * Clients an administrator marked first-party (the service's own applications): only their access
 * tokens, with the roles scope granted, act with the user's roles and permissions at the service's
 * management endpoints. Every existing client is third-party until marked.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => {
    table.boolean('first_party').notNullable().defaultTo(false);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => table.dropColumn('first_party'));
}
