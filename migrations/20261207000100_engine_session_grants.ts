import type { Knex } from 'knex';

/**
 * Every grant an engine (browser) session has named, by the session's uid (which stays when the engine
 * gives the session a new id). A session names only the latest authorization of each application, and
 * every authorization gets a grant of its own: without this record an application that authorized
 * twice in one browser keeps the first grant's access token (and refresh token) through a logout of
 * that browser. Kept as long as the session; the hourly cleanup deletes expired rows.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('engine_session_grants', (table) => {
    table.text('session_uid').notNullable();
    table.text('grant_id').notNullable();
    table.timestamp('expires_at', { useTz: true }).nullable().index();
    table.primary(['session_uid', 'grant_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('engine_session_grants');
}
