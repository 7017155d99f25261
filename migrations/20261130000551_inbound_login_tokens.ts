import type { Knex } from 'knex';

/**
 * Inbound login (docs/inbound-sso.md): a first-party service hands a signed-in person back to this
 * service with a one-time login token. Only the token's SHA-256 is stored; it lives 60 seconds and is
 * used once (used_at set by one conditional UPDATE).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('inbound_login_tokens', (table) => {
    table.string('token_hash', 64).primary();
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.string('client_id', 100).notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('used_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('inbound_login_tokens');
}
