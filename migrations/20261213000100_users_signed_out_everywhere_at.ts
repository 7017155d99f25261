import type { Knex } from 'knex';

/**
 * When the user was last signed out everywhere (a password change or reset, revoke-all, an
 * administrator's revocation or disable): a login flow whose steps ran before that can't finish after
 * it (src/identity/auth-flow/flow-engine.ts), and writing it takes the user's row, which a finishing
 * flow holds until it commits (src/identity/sessions/sessions.ts, revokeUserSessions).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (table) => {
    table.timestamp('signed_out_everywhere_at', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (table) => {
    table.dropColumn('signed_out_everywhere_at');
  });
}
