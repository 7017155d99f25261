import type { Knex } from 'knex';

/**
 * When a client was last disabled: the access tokens it was issued until then stay refused once it is
 * enabled again (an administrator disables a client whose secret or tokens leaked; enabling it after a
 * new secret must not bring the old tokens back). Null for a client never disabled.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => {
    table.timestamp('tokens_not_before', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oauth_clients', (table) => {
    table.dropColumn('tokens_not_before');
  });
}
