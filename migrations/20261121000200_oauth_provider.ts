import type { Knex } from 'knex';

/**
 * Storage of the OAuth 2.0 / OpenID Connect provider. Secrets, codes and refresh tokens are kept only
 * as SHA-256 hashes (base64url, 43 characters); the engine's payload is kept beside them without the
 * value itself.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('oauth_clients', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.string('client_id', 100).notNullable().unique();
    table.string('client_secret_hash', 255).nullable();
    table.string('type', 20).notNullable();
    table.string('name', 255).notNullable();
    table.specificType('redirect_uris', 'text[]').notNullable().defaultTo('{}');
    table.specificType('post_logout_redirect_uris', 'text[]').notNullable().defaultTo('{}');
    table.specificType('allowed_scopes', 'text[]').notNullable();
    table.specificType('grant_types', 'text[]').notNullable().defaultTo('{authorization_code,refresh_token}');
    table.boolean('is_active').notNullable().defaultTo(true);
    table.uuid('owner_id').nullable().references('users.id').onDelete('SET NULL');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw(`
    alter table oauth_clients add constraint oauth_clients_type_secret check (
      (type = 'public' and client_secret_hash is null) or
      (type = 'confidential' and client_secret_hash is not null)
    )`);

  await db.schema.createTable('authorization_codes', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.string('code_hash', 64).notNullable().unique();
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table
      .string('client_id', 100)
      .notNullable()
      .references('oauth_clients.client_id')
      .onDelete('CASCADE')
      .onUpdate('CASCADE');
    table.text('redirect_uri').notNullable();
    table.specificType('scopes', 'text[]').notNullable();
    table.string('state', 255).nullable();
    table.string('code_challenge', 128).nullable();
    table.string('code_challenge_method', 10).nullable();
    table.string('grant_id', 64).notNullable().index();
    table.boolean('is_used').notNullable().defaultTo(false);
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.jsonb('payload').notNullable();
  });

  await db.schema.createTable('consents', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table
      .string('client_id', 100)
      .notNullable()
      .references('oauth_clients.client_id')
      .onDelete('CASCADE')
      .onUpdate('CASCADE');
    table.specificType('scopes', 'text[]').notNullable();
    table.timestamp('granted_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.unique(['user_id', 'client_id']);
  });

  await db.schema.createTable('oauth_refresh_tokens', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.string('token_hash', 64).notNullable().unique();
    // The engine's grant id: every token rotated from one authorization shares it.
    table.string('token_family_id', 64).notNullable().index();
    table.string('replaced_by_token_hash', 64).nullable();
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    table
      .string('client_id', 100)
      .notNullable()
      .references('oauth_clients.client_id')
      .onDelete('CASCADE')
      .onUpdate('CASCADE');
    table.specificType('scopes', 'text[]').notNullable();
    table.timestamp('consumed_at', { useTz: true }).nullable();
    table.timestamp('revoked_at', { useTz: true }).nullable();
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.jsonb('payload').notNullable();
  });

  // The engine's remaining models (Session, Interaction, Grant, ReplayDetection, ...), one row per
  // model instance.
  await db.schema.createTable('oidc_payloads', (table) => {
    table.string('model', 40).notNullable();
    table.string('id', 128).notNullable();
    table.jsonb('payload').notNullable();
    table.string('grant_id', 64).nullable();
    table.string('uid', 128).nullable();
    table.string('account_id', 64).nullable();
    table.timestamp('expires_at', { useTz: true }).nullable().index();
    table.timestamp('consumed_at', { useTz: true }).nullable();
    table.primary(['model', 'id']);
    table.index(['model', 'grant_id']);
    table.index(['model', 'uid']);
  });

  // Public halves of the signing keys, so every node publishes the same key set and a replaced key
  // stays published for 24 hours.
  await db.schema.createTable('signing_keys', (table) => {
    table.string('kid', 100).primary();
    table.string('purpose', 20).notNullable();
    table.jsonb('public_jwk').notNullable();
    table.timestamp('activated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('retired_at', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of [
    'signing_keys',
    'oidc_payloads',
    'oauth_refresh_tokens',
    'consents',
    'authorization_codes',
    'oauth_clients',
  ]) {
    await db.schema.dropTableIfExists(table);
  }
}
