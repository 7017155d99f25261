import type { Knex } from 'knex';

/**
 * Which main-auth session started a sign-in not finished yet: the session that asked for a one-time
 * SSO code (verification_codes, purpose sso_otc) or approved a QR sign-in (qr_login_requests). Ending
 * that one session (a logout, a revocation from the security settings) retires them too, so a code or
 * an approval a thief obtained with a stolen token dies when the owner throws that session out. Null
 * for every other code, and for rows made before this column (two minutes at most). A session row is
 * deleted 30 days after it expired, long after these: the reference then becomes null.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('verification_codes', (table) => {
    table.uuid('session_id').nullable().references('sessions.id').onDelete('SET NULL').index();
  });
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.uuid('session_id').nullable().references('sessions.id').onDelete('SET NULL').index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.dropColumn('session_id');
  });
  await db.schema.alterTable('verification_codes', (table) => {
    table.dropColumn('session_id');
  });
}
