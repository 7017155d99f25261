import type { Knex } from 'knex';

/**
 * An onboarding in progress (the steps after a registration through the pages): the onboarding cookie
 * names its row, and the row is what lets the cookie act. "Sign out everywhere", a password change or
 * reset, an administrator's revocation or disable delete the user's rows, so a copied cookie dies with
 * the user's sessions; the end of onboarding deletes its own.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('onboardings', (table) => {
    table.uuid('id').primary();
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    table.timestamp('expires_at', { useTz: true }).notNullable().index();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('onboardings');
}
