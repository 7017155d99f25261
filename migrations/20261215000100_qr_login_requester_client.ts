import type { Knex } from 'knex';

/**
 * Which application a QR sign-in is for: the client of the OIDC authorization whose login page showed
 * the code; null when the code signs in to this service itself (the identity API's flows, the service's
 * own pages). The approving page names it, so a code someone else shows ("scan to get a discount")
 * says what the approver would sign them in to. Not a foreign key: a client deleted meanwhile leaves
 * its id.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.string('requester_client_id', 100).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('qr_login_requests', (table) => {
    table.dropColumn('requester_client_id');
  });
}
