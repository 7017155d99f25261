import type { Knex } from 'knex';

/**
 * The permission of the admin API's funnel and allowed-methods operations (docs/admin.md). super_admin
 * holds it through `*`; OAuth clients and users already have theirs (identity.oauth_clients.manage,
 * identity.users.manage).
 */
export async function up(db: Knex): Promise<void> {
  await db('permissions')
    .insert({
      key: 'identity.auth_flow.manage',
      description: 'Configure the sign-in funnels and allowed methods',
    })
    .onConflict('key')
    .ignore();
}

export async function down(db: Knex): Promise<void> {
  await db('permissions').where({ key: 'identity.auth_flow.manage' }).delete();
}
