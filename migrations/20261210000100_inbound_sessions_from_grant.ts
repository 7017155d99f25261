import type { Knex } from 'knex';

/**
 * Which grant an inbound login was made from: the grant of the access token a first-party application
 * traded for the login token (POST /oauth/sso/inbound, docs/inbound-sso.md), kept on the token and on
 * the main-auth session it starts. Revoking that grant (the user ending that sign-in to applications,
 * withdrawing the application's consent, a logout of that browser, a reused refresh token) ends the
 * session, and a token not yet used then starts none: a thief who copied the application's access
 * token would otherwise keep a session of their own for 30 days after the owner revoked the grant.
 * Null for a token made before this column, and for every other session. Grant ids are the engine's,
 * no foreign key (a revoked grant's row is deleted).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('inbound_login_tokens', (table) => {
    table.text('grant_id').nullable().index();
  });
  await db.schema.alterTable('sessions', (table) => {
    table.text('from_grant_id').nullable().index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('sessions', (table) => {
    table.dropColumn('from_grant_id');
  });
  await db.schema.alterTable('inbound_login_tokens', (table) => {
    table.dropColumn('grant_id');
  });
}
