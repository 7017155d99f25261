import type { Knex } from 'knex';

/**
 * When a scope was last taken from a client. Its tokens are judged by the client as it is now, so they
 * lose the scope at once; were the scope given back, the tokens issued before it was taken would have
 * it again. Giving a scope back therefore moves tokens_not_before up to this time, and those tokens
 * stay refused.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => {
    table.timestamp('scopes_taken_at', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => {
    table.dropColumn('scopes_taken_at');
  });
}
