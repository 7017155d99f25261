import type { Knex } from 'knex';

/**
 * The third-party provider accounts (provider, subject) a user unlinked: signing in through one again
 * doesn't link it back automatically, even when the provider vouches for the account's email or phone;
 * the person signs in to the account first (src/identity/federation/unlinked-subjects.ts). A
 * deliberate link of the same subject forgets it. Deleted with the user.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('unlinked_provider_subjects', (table) => {
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.text('provider').notNullable();
    table.text('external_subject').notNullable();
    table.timestamp('unlinked_at', { useTz: true }).notNullable();
    table.primary(['user_id', 'provider', 'external_subject']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('unlinked_provider_subjects');
}
