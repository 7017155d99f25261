import type { Queryable } from '../../db/database.js';
import type { AuthMethodType } from './auth-method-type.js';

/** A sign-in method attached to a user (table user_auth_methods). */
export interface UserAuthMethod {
  id: string;
  userId: string;
  type: AuthMethodType;
  provider: string | null;
  externalSubject: string | null;
  settings: Record<string, unknown>;
  /** Available at login; a password may be disabled as a login step. */
  isEnabled: boolean;
  isVerified: boolean;
  lastUsedAt: Date | null;
  createdAt: Date;
}

export interface UserAuthMethodRow {
  id: string;
  user_id: string;
  type: AuthMethodType;
  provider: string | null;
  external_subject: string | null;
  settings: Record<string, unknown>;
  is_enabled: boolean;
  is_verified: boolean;
  last_used_at: Date | null;
  created_at: Date;
}

export function userAuthMethodFromRow(row: UserAuthMethodRow): UserAuthMethod {
  return {
    id: row.id,
    userId: row.user_id,
    type: row.type,
    provider: row.provider,
    externalSubject: row.external_subject,
    settings: row.settings,
    isEnabled: row.is_enabled,
    isVerified: row.is_verified,
    lastUsedAt: row.last_used_at,
    createdAt: row.created_at,
  };
}

export async function listUserAuthMethods(db: Queryable, userId: string): Promise<UserAuthMethod[]> {
  const rows: UserAuthMethodRow[] = await db('user_auth_methods')
    .where({ user_id: userId })
    .orderBy(['created_at', 'id']);
  return rows.map(userAuthMethodFromRow);
}

/** The user's method of a type (not for oauth_provider, of which a user may have several). */
export async function findUserAuthMethod(
  db: Queryable,
  userId: string,
  type: Exclude<AuthMethodType, 'oauth_provider'>,
): Promise<UserAuthMethod | undefined> {
  const row: UserAuthMethodRow | undefined = await db('user_auth_methods')
    .where({ user_id: userId, type })
    .first();
  return row ? userAuthMethodFromRow(row) : undefined;
}

export interface MethodState {
  settings?: Record<string, unknown>;
  isEnabled: boolean;
  isVerified: boolean;
}

/** Creates or replaces the user's method of a type. */
export async function saveUserAuthMethod(
  db: Queryable,
  userId: string,
  type: Exclude<AuthMethodType, 'oauth_provider'>,
  state: MethodState,
  now: Date,
): Promise<UserAuthMethod> {
  // The partial unique index (oauth_provider excluded) is the conflict target: knex's onConflict
  // can't name an index predicate, hence the raw statement.
  const keepSettings = state.settings === undefined;
  const result = (await db.raw(
    `insert into user_auth_methods (user_id, type, settings, is_enabled, is_verified, created_at, updated_at)
     values (?, ?, ?::jsonb, ?, ?, ?, ?)
     on conflict (user_id, type) where type <> 'oauth_provider'
     do update set is_enabled = excluded.is_enabled, is_verified = excluded.is_verified,
       updated_at = excluded.updated_at,
       settings = case when ? then user_auth_methods.settings else excluded.settings end
     returning *`,
    [
      userId,
      type,
      JSON.stringify(state.settings ?? {}),
      state.isEnabled,
      state.isVerified,
      now,
      now,
      keepSettings,
    ],
  )) as { rows: UserAuthMethodRow[] };
  const row = result.rows[0]!;
  return userAuthMethodFromRow(row);
}

/**
 * Records a use of the method with a setting that only moves forward (e.g. the last accepted TOTP time
 * step), as one compare-and-set: of two requests presenting the same value, only one succeeds.
 */
export async function advanceMethodCounter(
  db: Queryable,
  methodId: string,
  counter: string,
  value: number,
  now: Date,
): Promise<boolean> {
  const changed = await db('user_auth_methods')
    .where({ id: methodId })
    .whereRaw(`coalesce((settings->>?)::bigint, -1) < ?`, [counter, value])
    .update({
      settings: db.raw(`jsonb_set(settings, ?::text[], to_jsonb(?::bigint))`, [`{${counter}}`, value]),
      last_used_at: now,
    });
  return changed > 0;
}

export async function deleteUserAuthMethod(db: Queryable, methodId: string): Promise<void> {
  await db('user_auth_methods').where({ id: methodId }).delete();
}
