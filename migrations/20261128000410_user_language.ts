import type { Knex } from 'knex';

/**
 * The user's language (a BCP 47 tag such as `ru` or `pt-BR`), for the messages the service sends them
 * (security notifications). Unset: English. Set by onboarding ("language preferences").
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (table) => {
    table.string('language', 35).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (table) => table.dropColumn('language'));
}
