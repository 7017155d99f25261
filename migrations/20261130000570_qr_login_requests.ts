import type { Knex } from 'knex';

/**
 * QR sign-in (step `qr`): a waiting device shows a code; a device already signed in scans it and
 * approves; the waiting device's flow then completes as that user. Short-lived (2 minutes), single use,
 * the token stored only as its SHA-256.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('qr_login_requests', (table) => {
    table.string('token_hash', 64).primary();
    table.string('status', 10).notNullable().defaultTo('pending');
    table.uuid('user_id').nullable().references('users.id').onDelete('CASCADE');
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('approved_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw(`
    alter table qr_login_requests add constraint qr_login_requests_status_check
      check (status in ('pending', 'approved', 'used'))`);
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('qr_login_requests');
}
