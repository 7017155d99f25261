import type { Knex } from 'knex';

/**
 * Which main-auth session an inbound login token comes from: the session whose end revokes the grant
 * of the access token the token was made from (the session that asked for the one-time SSO code the
 * grant was exchanged for, or whose QR approval signed in the browser that was issued the grant). The
 * session the login token starts ends with it
 * (sessions.started_by_session_id), and a token not yet used when it ended starts none. Null for a
 * token made from a grant no main-auth session started (the application's own sign-in). Deleted with
 * the session's row.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('inbound_login_tokens', (table) => {
    table.uuid('started_by_session_id').nullable().references('sessions.id').onDelete('CASCADE');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('inbound_login_tokens', (table) => {
    table.dropColumn('started_by_session_id');
  });
}
