import type { Knex } from 'knex';

/**
 * Authorizations (the engine's grants) revoked in the last access-token lifetime: a code replayed, a
 * refresh token reused or revoked, a consent withdrawn, a logout. Our access tokens are self-contained
 * JWTs naming their grant; every node keeps this short list in memory, reads what was added since its
 * last look every few seconds (recorded_at, the database's clock), and refuses the tokens of a revoked
 * grant until they would have expired anyway (expires_at; the hourly cleanup deletes the row then).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('oauth_revoked_grants', (table) => {
    table.string('grant_id', 64).primary();
    table.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(db.fn.now()).index();
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('oauth_revoked_grants');
}
