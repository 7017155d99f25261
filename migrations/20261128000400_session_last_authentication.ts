import type { Knex } from 'knex';

/**
 * When the session last authenticated its user: the login, then every re-authentication (a password
 * or second-factor proof asked before a sensitive change). Sessions begun before it existed take their
 * login time.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('sessions', (table) => {
    table.timestamp('last_authenticated_at', { useTz: true }).nullable();
  });
  await db('sessions').update({ last_authenticated_at: db.ref('auth_time') });
  await db.schema.alterTable('sessions', (table) => {
    table.timestamp('last_authenticated_at', { useTz: true }).notNullable().alter();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('sessions', (table) => table.dropColumn('last_authenticated_at'));
}
