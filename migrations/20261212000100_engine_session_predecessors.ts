import type { Knex } from 'knex';

/**
 * Which earlier engine session a browser held when it started another one, by the sessions' uids: a
 * browser whose cookie names a session renamed in a copy of that cookie (a thief's consent gives it a
 * new id, same uid) finds no session, and its owner's next sign-in starts one with a new uid. The
 * owner's logout there ends the earlier uid's live session too. The hourly cleanup deletes a row once
 * no engine session of its uid is left.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('engine_session_predecessors', (table) => {
    table.text('session_uid').notNullable();
    table.text('earlier_uid').notNullable();
    table.primary(['session_uid', 'earlier_uid']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('engine_session_predecessors');
}
