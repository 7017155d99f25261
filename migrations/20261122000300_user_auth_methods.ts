import type { Knex } from 'knex';

/**
 * The sign-in methods attached to a user (spec: User auth method), and the encrypted secrets some of
 * them need (a TOTP method's settings keep only a reference to its secret).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('auth_method_secrets', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    // AES-256-GCM, see src/identity/auth-methods/secret-box.ts; never the plain secret.
    table.text('ciphertext').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });

  await db.schema.createTable('user_auth_methods', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.string('type', 30).notNullable();
    table.string('provider', 100).nullable();
    table.string('external_subject', 255).nullable();
    table.jsonb('settings').notNullable().defaultTo('{}');
    table.boolean('is_enabled').notNullable().defaultTo(true);
    table.boolean('is_verified').notNullable().defaultTo(false);
    table.timestamp('last_used_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.index(['user_id']);
  });
  await db.raw(`
    alter table user_auth_methods add constraint user_auth_methods_type_check
      check (type in ('password', 'email_otp', 'sms_otp', 'totp', 'oauth_provider'))`);
  // One method of each kind per user, except third-party providers (one per provider account).
  await db.raw(`
    create unique index user_auth_methods_one_per_type on user_auth_methods (user_id, type)
      where type <> 'oauth_provider'`);
  await db.raw(`
    create unique index user_auth_methods_provider_subject on user_auth_methods (provider, external_subject)
      where type = 'oauth_provider'`);
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('user_auth_methods');
  await db.schema.dropTableIfExists('auth_method_secrets');
}
