import type { Knex } from 'knex';

/**
 * An engine session that ended (a logout, "sign out everywhere", a password change) is marked, not
 * deleted: a request that read the session just before it ended saves it again when it finishes, and
 * a deleted row would come back to life signed in, while a marked row stays ended (knex-adapter.ts,
 * SessionAdapter). Codes issued in such a request name the session's uid and are refused with it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_payloads', (table) => {
    table.timestamp('ended_at', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_payloads', (table) => {
    table.dropColumn('ended_at');
  });
}
