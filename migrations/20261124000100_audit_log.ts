import type { Knex } from 'knex';

/**
 * The security audit trail (spec: Audit): login failures and successes, lockouts, password changes,
 * refresh-token reuse, revoked sessions, added or removed methods. user_id has no foreign key on
 * purpose: the trail outlives the account it is about.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('audit_log', (table) => {
    // Append-only: the sequence gives the order events were written in.
    table.bigIncrements('id').primary();
    table.string('type', 100).notNullable();
    table.uuid('user_id').nullable();
    table.string('ip', 64).nullable();
    table.string('user_agent', 512).nullable();
    table.jsonb('details').notNullable().defaultTo('{}');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.index(['user_id', 'created_at']);
    table.index(['type', 'created_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('audit_log');
}
