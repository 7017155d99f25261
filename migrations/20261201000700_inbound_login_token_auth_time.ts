import type { Knex } from 'knex';

/**
 * The user's authentication time, from the access token a login token was made from: the session an
 * inbound login starts keeps it, so inbound SSO can't pass for a fresh authentication. A token made
 * before this column (60 seconds at most) has none and is refused: the person follows the link again.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('inbound_login_tokens', (table) => {
    table.timestamp('auth_time', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('inbound_login_tokens', (table) => {
    table.dropColumn('auth_time');
  });
}
