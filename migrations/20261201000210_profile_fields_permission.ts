import type { Knex } from 'knex';

/**
 * The permission of the admin API's registration profile field operations (user_field_definitions,
 * docs/admin.md). super_admin holds it through `*`.
 */
export async function up(db: Knex): Promise<void> {
  await db('permissions')
    .insert({
      key: 'identity.profile_fields.manage',
      description: 'Define the registration profile fields',
    })
    .onConflict('key')
    .ignore();
}

export async function down(db: Knex): Promise<void> {
  await db('permissions').where({ key: 'identity.profile_fields.manage' }).delete();
}
