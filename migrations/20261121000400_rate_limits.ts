import type { Knex } from 'knex';

/**
 * Counters of rate-limiter-flexible's PostgreSQL store (its own schema: key, points, expire in epoch
 * ms), shared by every node. Created here rather than by the library so the schema stays migrated.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('rate_limits', (table) => {
    table.string('key', 255).primary();
    table.integer('points').notNullable().defaultTo(0);
    table.bigInteger('expire').nullable().index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('rate_limits');
}
