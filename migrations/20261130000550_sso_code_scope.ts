import type { Knex } from 'knex';

/**
 * Inbound-SSO one-time codes (purpose sso_otc) remember the scopes the signed-in user handed to the
 * client; the tokens themselves are created at the exchange and never stored with the code.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('verification_codes', (table) => {
    table.text('scope').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('verification_codes', (table) => {
    table.dropColumn('scope');
  });
}
