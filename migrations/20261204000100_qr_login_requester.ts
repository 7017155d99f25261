import type { Knex } from 'knex';

/**
 * Which device asked for a QR sign-in: the user agent (at most 512 characters) and IP address of the
 * request that showed the code. The approving page shows them before the person approves, so a link
 * sent by someone else ("scan to confirm") names the sender's browser and address, not the victim's.
 * Null for requests made before this column (two minutes at most).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.string('requester_user_agent', 512).nullable();
    table.string('requester_ip', 64).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.dropColumn('requester_user_agent');
    table.dropColumn('requester_ip');
  });
}
