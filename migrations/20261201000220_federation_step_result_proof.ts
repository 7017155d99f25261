import type { Knex } from 'knex';

/**
 * The answer of a funnel's `oauth` step is taken only with the proof the callback handed to the browser
 * that went through the provider (its SHA-256 here). Without it, whoever held a flow could send its start
 * link to someone else and take that person's sign-in.
 */
export async function up(db: Knex): Promise<void> {
  await db('federation_step_results').delete();
  await db.schema.alterTable('federation_step_results', (table) => {
    table.string('proof_hash', 64).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('federation_step_results', (table) => {
    table.dropColumn('proof_hash');
  });
}
