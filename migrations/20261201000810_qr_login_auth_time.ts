import type { Knex } from 'knex';

/**
 * When the approving user last authenticated (their main-auth session's last sign-in or
 * re-authentication): the session a QR sign-in starts keeps it, so approving a code with a signed-in
 * device's token can't pass for a fresh authentication. An approval made before this column (two
 * minutes at most) has none and is refused: the person shows a new code.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.timestamp('auth_time', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.dropColumn('auth_time');
  });
}
