import type { Knex } from 'knex';

/**
 * A flow session's plan: the funnel flags of its pending steps (mandatory, screen group) as they were
 * when the flow started, and whether the funnel was already made the identified user's own.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('auth_flow_sessions', (table) => {
    table.jsonb('plan').notNullable().defaultTo('{}');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('auth_flow_sessions', (table) => {
    table.dropColumn('plan');
  });
}
