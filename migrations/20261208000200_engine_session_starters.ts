import type { Knex } from 'knex';

/**
 * Which main-auth session vouched for an engine (browser) session, by the engine session's uid: the
 * session that approved the QR sign-in done on the OIDC pages. Ending the approving session ends the
 * engine session and the grants issued in it, as it ends the main-auth sessions it started
 * (sessions.started_by_session_id). Deleted with the approving session's row.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('engine_session_starters', (table) => {
    table.text('session_uid').primary();
    table.uuid('started_by_session_id').notNullable().references('sessions.id').onDelete('CASCADE').index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('engine_session_starters');
}
