import type { Knex } from 'knex';

/**
 * Avatars uploaded by users (onboarding, "Add a photo"): the image itself, served by the service at
 * /avatars/<id> and named by the user's `picture` claim. A new upload is a new row (a new address, so
 * the image may be cached for ever); the user's previous one is deleted with it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('user_avatars', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('user_id').notNullable().unique().references('id').inTable('users').onDelete('CASCADE');
    table.string('content_type', 20).notNullable();
    table.binary('image').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('user_avatars');
}
