import type { Knex } from 'knex';

/**
 * When the user behind an inbound-SSO one-time code last authenticated (their main-auth session's last
 * sign-in or re-authentication, at the time they asked for the code): the tokens the code is exchanged
 * for carry it as auth_time, so asking for a code can't pass for a fresh authentication. A code made
 * before this column (60 seconds at most) has none and is refused: the person asks for a new one.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('verification_codes', (table) => {
    table.timestamp('auth_time', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('verification_codes', (table) => {
    table.dropColumn('auth_time');
  });
}
