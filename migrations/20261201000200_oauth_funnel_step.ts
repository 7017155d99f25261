import type { Knex } from 'knex';

/**
 * The built-in `oauth` step (a third-party provider as one step of a funnel):
 *
 * - `auth_flow_steps.settings`: a step's own configuration in the funnel (the `oauth` step names its
 *   provider: `{ "provider": "google" }`); null for steps that need none.
 * - `federation_step_results`: the account a provider sign-in resolved to, waiting for the flow to take
 *   it once (the browser went to the provider and back; the flow's `oauth` step then submits). Keyed by
 *   the SHA-256 of a token only that flow holds; ten minutes, single use.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('auth_flow_steps', (table) => {
    table.jsonb('settings').nullable();
  });
  await db.schema.createTable('federation_step_results', (table) => {
    table.string('token_hash', 64).primary();
    table.string('provider', 100).notNullable();
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('used_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('federation_step_results');
  await db.schema.alterTable('auth_flow_steps', (table) => {
    table.dropColumn('settings');
  });
}
