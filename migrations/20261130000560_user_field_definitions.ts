import type { Knex } from 'knex';

/**
 * Registration profile fields (spec: user_field_definitions): what an administrator asks new users
 * for beyond the sign-in identifier (first name, INN, birth date...), rendered by the registration
 * step `profile` and validated on the server; and each user's answers.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('user_field_definitions', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    // Stable snake/kebab-case name of the field: the input name and the key of the stored value.
    table.string('key', 64).notNullable().unique();
    table.string('title', 255).notNullable();
    table.string('type', 16).notNullable();
    table.boolean('required').notNullable().defaultTo(false);
    // { pattern?, minLength?, maxLength?, min?, max?, options? } (profile-fields/field-definitions.ts).
    table.jsonb('validation').notNullable().defaultTo('{}');
    table.integer('sort_order').notNullable().defaultTo(0);
    table.boolean('is_active').notNullable().defaultTo(true);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw(`
    alter table user_field_definitions add constraint user_field_definitions_type_check
      check (type in ('text', 'number', 'date', 'email', 'tel', 'select', 'checkbox'))`);
  await db.schema.createTable('user_field_values', (table) => {
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table
      .string('field_key', 64)
      .notNullable()
      .references('user_field_definitions.key')
      .onDelete('CASCADE')
      .onUpdate('CASCADE');
    table.text('value').notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.primary(['user_id', 'field_key']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('user_field_values');
  await db.schema.dropTableIfExists('user_field_definitions');
}
