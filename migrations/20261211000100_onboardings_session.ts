import type { Knex } from 'knex';

/**
 * The main-auth session a registration through the service's own pages started alongside its
 * onboarding. Ending that session (its browser's logout, a revocation from the security settings)
 * ends the onboarding too: the onboarding cookie, or a copy of it, would otherwise go on naming the
 * account, changing its photo or giving a code-only account its first password for its half hour.
 * Null for an onboarding of an application's sign-in (the engine's session starts after it) and for
 * rows made before this column (half an hour at most).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('onboardings', (table) => {
    table.uuid('session_id').nullable().references('sessions.id').onDelete('CASCADE').index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('onboardings', (table) => {
    table.dropColumn('session_id');
  });
}
