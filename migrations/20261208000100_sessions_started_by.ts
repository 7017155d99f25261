import type { Knex } from 'knex';

/**
 * Which main-auth session vouched for a new one: the session that approved the QR sign-in the new
 * session came from. Ending the approving session (a logout, a revocation from the security settings,
 * a reused refresh token) ends the sessions it started, so a thief who approved a QR code of their own
 * machine with a copied token and took it at once keeps nothing once the owner throws that session
 * out. Null for every other session. A session row is deleted 30 days after it expired: the reference
 * then becomes null.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('sessions', (table) => {
    table.uuid('started_by_session_id').nullable().references('sessions.id').onDelete('SET NULL').index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('sessions', (table) => {
    table.dropColumn('started_by_session_id');
  });
}
