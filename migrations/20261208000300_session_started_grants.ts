import type { Knex } from 'knex';

/**
 * Which main-auth session a grant was made from: the session that asked for the one-time SSO code the
 * grant was created for at its exchange (src/oidc/sso/sso-code-grant.ts). Ending that session revokes
 * the grant (its refresh tokens, and its access tokens as a revoked grant). Deleted with the session's row.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('session_started_grants', (table) => {
    table.text('grant_id').primary();
    table.uuid('started_by_session_id').notNullable().references('sessions.id').onDelete('CASCADE').index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('session_started_grants');
}
