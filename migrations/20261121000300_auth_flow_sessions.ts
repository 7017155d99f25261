import type { Knex } from 'knex';

/** Server-side state of a login or registration flow between its steps (spec: AuthFlowSession). */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('auth_flow_sessions', (table) => {
    // SHA-256 of the single-use session id handed to the client; rotated at every accepted step.
    table.string('id_hash', 64).primary();
    table.string('flow', 20).notNullable();
    table.specificType('completed_steps', 'text[]').notNullable().defaultTo('{}');
    table.specificType('pending_steps', 'text[]').notNullable();
    table.jsonb('temp_data').notNullable().defaultTo('{}');
    table.uuid('user_id').nullable().references('users.id').onDelete('CASCADE');
    // Where the flow runs: the OIDC interaction it belongs to, the client's IP and user agent.
    table.jsonb('context').notNullable().defaultTo('{}');
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('auth_flow_sessions');
}
