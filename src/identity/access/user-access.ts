import type { Queryable } from '../../db/database.js';

/** A user's roles and the permissions they carry, read at every token issue (spec: Tokens). */
export interface UserAccess {
  roles: string[];
  /** `['*']` for a super_admin: the wildcard replaces the list. */
  permissions: string[];
}

export const wildcardPermission = '*';

export async function loadUserAccess(db: Queryable, userId: string): Promise<UserAccess> {
  const rows: { role: string; permission: string | null }[] = await db('user_roles')
    .join('roles', 'roles.id', 'user_roles.role_id')
    .leftJoin('role_permissions', 'role_permissions.role_id', 'roles.id')
    .where('user_roles.user_id', userId)
    .select('roles.key as role', 'role_permissions.permission_key as permission');
  const roles = [...new Set(rows.map((row) => row.role))].sort();
  const permissions = new Set(rows.flatMap((row) => (row.permission ? [row.permission] : [])));
  return {
    roles,
    permissions: permissions.has(wildcardPermission) ? [wildcardPermission] : [...permissions].sort(),
  };
}

/** A row of userWithAccessQuery: the user's columns plus their role and permission keys. */
export type UserWithAccessRow<Row> = Row & { role_keys: string[]; permission_keys: string[] };

/**
 * A user's record fields and access together, one row per user (the token endpoint reads both for
 * every code exchange and refresh). Narrow it with a where on users.id; the refresh-token read joins
 * it laterally (adapters/oidc/knex-adapter.ts).
 */
export function userWithAccessQuery(db: Queryable) {
  return db('users')
    .leftJoin('user_roles', 'user_roles.user_id', 'users.id')
    .leftJoin('roles', 'roles.id', 'user_roles.role_id')
    .leftJoin('role_permissions', 'role_permissions.role_id', 'roles.id')
    .groupBy('users.id')
    .select(
      'users.*',
      db.raw(
        `coalesce(array_agg(distinct roles.key) filter (where roles.key is not null), '{}') as role_keys`,
      ),
      db.raw(
        `coalesce(array_agg(distinct role_permissions.permission_key) filter (where role_permissions.permission_key is not null), '{}') as permission_keys`,
      ),
    );
}

export function userWithAccessFromRow<Row>(row: UserWithAccessRow<Row>): { user: Row; access: UserAccess } {
  const { role_keys: roles, permission_keys: permissions, ...user } = row;
  return {
    user: user as Row,
    access: {
      roles: [...roles].sort(),
      permissions: permissions.includes(wildcardPermission) ? [wildcardPermission] : [...permissions].sort(),
    },
  };
}

/** A user's record and access, in one query. Undefined when the user does not exist. */
export async function findUserWithAccess<Row>(
  db: Queryable,
  userId: string,
): Promise<{ user: Row; access: UserAccess } | undefined> {
  const row = (await userWithAccessQuery(db).where('users.id', userId).first()) as
    UserWithAccessRow<Row> | undefined;
  return row ? userWithAccessFromRow(row) : undefined;
}

export function hasPermission(access: Pick<UserAccess, 'permissions'>, permission: string): boolean {
  return access.permissions.includes(wildcardPermission) || access.permissions.includes(permission);
}

/** Gives a user a role by key; unknown role keys are an error the caller reports. */
export async function grantRole(db: Queryable, userId: string, roleKey: string): Promise<boolean> {
  const role: { id: string } | undefined = await db('roles').where({ key: roleKey }).first('id');
  if (!role) return false;
  await db('user_roles')
    .insert({ user_id: userId, role_id: role.id })
    .onConflict(['user_id', 'role_id'])
    .ignore();
  return true;
}
