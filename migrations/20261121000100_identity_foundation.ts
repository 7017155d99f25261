import type { Knex } from 'knex';

/**
 * Users, credentials, roles and permissions, organization memberships: the records the OAuth provider
 * and the identity subsystem share.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('users', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    // Stored normalised: email lower-cased, phone in E.164.
    table.string('email', 320).nullable();
    table.boolean('email_verified').notNullable().defaultTo(false);
    table.string('phone', 20).nullable();
    table.boolean('phone_verified').notNullable().defaultTo(false);
    table.string('given_name', 100).nullable();
    table.string('family_name', 100).nullable();
    table.string('preferred_username', 100).nullable();
    table.text('picture').nullable();
    table.string('status', 20).notNullable().defaultTo('active');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.unique(['email']);
    table.unique(['phone']);
  });
  await db.raw(
    `alter table users add constraint users_status_check check (status in ('active', 'disabled'))`,
  );
  await db.raw(`alter table users add constraint users_email_lowercase check (email = lower(email))`);

  await db.schema.createTable('user_credentials', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.string('type', 20).notNullable().defaultTo('password');
    // argon2id PHC string; never the password.
    table.text('secret_hash').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.unique(['user_id', 'type']);
  });

  await db.schema.createTable('permissions', (table) => {
    table.string('key', 150).primary();
    table.text('description').notNullable().defaultTo('');
  });

  await db.schema.createTable('roles', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.string('key', 100).notNullable().unique();
    table.string('name', 255).notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });

  await db.schema.createTable('role_permissions', (table) => {
    table.uuid('role_id').notNullable().references('roles.id').onDelete('CASCADE');
    table.string('permission_key', 150).notNullable().references('permissions.key').onDelete('CASCADE');
    table.primary(['role_id', 'permission_key']);
  });

  await db.schema.createTable('user_roles', (table) => {
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.uuid('role_id').notNullable().references('roles.id').onDelete('CASCADE');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.primary(['user_id', 'role_id']);
  });

  // Organizations are owned by the organizations domain; identity keeps the memberships it needs for
  // the `organizations` claim.
  await db.schema.createTable('organization_memberships', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.uuid('organization_id').notNullable();
    table.string('organization_name', 255).nullable();
    table.string('role', 50).notNullable().defaultTo('member');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.unique(['user_id', 'organization_id']);
  });

  // The permission catalogue: `*` is the wildcard of super_admin; the rest are the catalogue entries the
  // spec names (service scopes are `service:<catalogue key>`).
  await db('permissions').insert([
    { key: '*', description: 'Every permission' },
    { key: 'identity.oauth_clients.manage', description: 'Manage OAuth clients' },
    { key: 'identity.users.manage', description: 'Manage users' },
    { key: 'platform.reference-data.manage', description: 'Manage platform reference data' },
    { key: 'platform.reference-data.read', description: 'Read platform reference data' },
    { key: 'crm.aggregates.read', description: 'Read financial aggregates' },
    { key: 'crm.teacher_payouts.read', description: 'Read teacher payouts' },
    { key: 'crm.entitlements.read', description: 'Read entitlements' },
    { key: 'competitions.results.read', description: 'Read competition results' },
    { key: 'management.dashboards.read.finance', description: 'Read finance dashboards' },
  ]);
  const [superAdmin] = await db('roles').insert({ key: 'super_admin', name: 'Super administrator' }, ['id']);
  await db('role_permissions').insert({ role_id: superAdmin.id, permission_key: '*' });
  await db('roles').insert({ key: 'user', name: 'User' });
}

export async function down(db: Knex): Promise<void> {
  for (const table of [
    'organization_memberships',
    'user_roles',
    'role_permissions',
    'roles',
    'permissions',
    'user_credentials',
    'users',
  ]) {
    await db.schema.dropTableIfExists(table);
  }
}
