import type { Knex } from 'knex';

/**
 * Main-auth sessions (one per successful login), their rotating refresh tokens, and the device
 * bindings with the saved accounts listed on a device's login screen.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('device_bindings', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    // SHA-256 of the random value in the device cookie; never the value.
    table.string('secret_hash', 64).notNullable().unique();
    table.text('user_agent').notNullable().defaultTo('');
    table.string('ip_address', 64).notNullable().defaultTo('');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('revoked_at', { useTz: true }).nullable();
  });

  await db.schema.createTable('sessions', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    // The session's current refresh token (it changes at every rotation; no FK: the two rows point at
    // each other and are written in one transaction).
    table.uuid('refresh_token_id').nullable();
    table.uuid('device_binding_id').nullable().references('device_bindings.id').onDelete('SET NULL');
    table.text('user_agent').notNullable().defaultTo('');
    table.string('ip_address', 64).notNullable().defaultTo('');
    table.string('browser_name', 100).notNullable().defaultTo('');
    table.string('auth_method', 100).notNullable();
    table.timestamp('auth_time', { useTz: true }).notNullable();
    table.timestamp('last_activity_at', { useTz: true }).notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.boolean('is_revoked').notNullable().defaultTo(false);
    table.timestamp('revoked_at', { useTz: true }).nullable();
    table.string('revoked_reason', 100).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });

  await db.schema.createTable('refresh_tokens', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    // SHA-256 of the UUID the client holds in its cookie.
    table.string('token_hash', 64).notNullable().unique();
    table.uuid('session_id').notNullable().references('sessions.id').onDelete('CASCADE').index();
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    table.boolean('is_revoked').notNullable().defaultTo(false);
    table.timestamp('revoked_at', { useTz: true }).nullable();
    // Rotation chain: the token that replaced this one.
    table.uuid('replaced_by_id').nullable();
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });

  await db.schema.createTable('saved_accounts', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('device_binding_id').notNullable().references('device_bindings.id').onDelete('CASCADE');
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    table.string('email', 320).nullable();
    table.string('phone', 20).nullable();
    table.string('first_name', 100).nullable();
    table.string('last_name', 100).nullable();
    table.text('avatar_url').nullable();
    table.timestamp('last_used_at', { useTz: true }).notNullable();
    table.timestamp('revoked_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.unique(['device_binding_id', 'user_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['saved_accounts', 'refresh_tokens', 'sessions', 'device_bindings']) {
    await db.schema.dropTableIfExists(table);
  }
}
