import type { Knex } from 'knex';

/**
 * Whether the user ever signed in on the device with a proof of their own (a password, a code, a
 * provider), not only by another session's approval (a QR code): only then is the device the
 * account's own lockout source (src/identity/brute-force/login-source.ts). Accounts saved before
 * this column were saved by sign-ins of every kind; they keep the standing they had.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('saved_accounts', (table) => {
    table.boolean('proven_here').notNullable().defaultTo(true);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('saved_accounts', (table) => {
    table.dropColumn('proven_here');
  });
}
