import type { Knex } from 'knex';

/**
 * One-time codes of every purpose (spec: Verification code): contact verification, login by code,
 * password reset, inbound SSO. The code itself is never stored, only its SHA-256.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('verification_codes', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    // Normalised email (lower case) or phone (E.164).
    table.string('identifier', 320).notNullable();
    table.string('purpose', 20).notNullable();
    table.string('code_hash', 64).notNullable();
    table.string('status', 10).notNullable().defaultTo('pending');
    table.integer('attempts').notNullable().defaultTo(0);
    table.integer('max_attempts').notNullable().defaultTo(5);
    // The account the code is for; null for a code sent to an address no account has.
    table.uuid('user_id').nullable().references('users.id').onDelete('CASCADE');
    table.string('ip', 64).nullable();
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('used_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.index(['identifier', 'purpose', 'status']);
  });
  await db.raw(`
    alter table verification_codes
      add constraint verification_codes_purpose_check
        check (purpose in ('contact_verify', 'login', 'reset_password', 'sso_otc')),
      add constraint verification_codes_status_check check (status in ('pending', 'used', 'expired'))`);
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('verification_codes');
}
