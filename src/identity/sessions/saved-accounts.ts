import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import type { User } from '../users/user.js';
import { isUuid } from '../uuid.js';

/**
 * Accounts saved on a device (table saved_accounts): the login screen lists them. The server is the
 * source of truth; the display snapshot (contact, name, avatar) is refreshed at every sign-in. No
 * password or token is ever kept here.
 */
export interface SavedAccount {
  id: string;
  userId: string;
  email: string | null;
  phone: string | null;
  firstName: string | null;
  lastName: string | null;
  avatarUrl: string | null;
  lastUsedAt: Date;
}

interface SavedAccountRow {
  id: string;
  user_id: string;
  email: string | null;
  phone: string | null;
  first_name: string | null;
  last_name: string | null;
  avatar_url: string | null;
  last_used_at: Date;
}

/**
 * Saves (or refreshes and re-lists, if the user had removed it) the account on the device. `alongside`
 * adds changes (CTEs) to the statement (the device's new binding). `provenHere`: the sign-in proved who
 * signs in itself, rather than on another session's word (a QR approval); once true for the device,
 * it stays true (saved_accounts.proven_here).
 */
export async function saveAccountOnDevice(
  db: Queryable,
  deviceBindingId: string,
  user: User,
  now: Date,
  alongside?: (insert: Knex.QueryBuilder) => Knex.QueryBuilder,
  provenHere = true,
): Promise<void> {
  const snapshot = {
    email: user.email,
    phone: user.phone,
    first_name: user.givenName,
    last_name: user.familyName,
    avatar_url: user.picture,
    last_used_at: now,
    revoked_at: null,
  };
  const insert = db('saved_accounts');
  await (alongside ? alongside(insert) : insert)
    .insert({
      device_binding_id: deviceBindingId,
      user_id: user.id,
      created_at: now,
      proven_here: provenHere,
      ...snapshot,
    })
    .onConflict(['device_binding_id', 'user_id'])
    .merge({ ...snapshot, proven_here: db.raw('saved_accounts.proven_here or excluded.proven_here') });
}

/** Whether the user ever signed in on the device (removing it from the list does not forget that). */
export async function isAccountSavedOnDevice(
  db: Queryable,
  deviceBindingId: string,
  userId: string,
): Promise<boolean> {
  const row = await db('saved_accounts')
    .where({ device_binding_id: deviceBindingId, user_id: userId })
    .first('id');
  return row !== undefined;
}

export async function listSavedAccounts(db: Queryable, deviceBindingId: string): Promise<SavedAccount[]> {
  const rows: SavedAccountRow[] = await db('saved_accounts')
    .where({ device_binding_id: deviceBindingId })
    .whereNull('revoked_at')
    .orderBy([{ column: 'last_used_at', order: 'desc' }, 'id']);
  return rows.map((row) => ({
    id: row.id,
    userId: row.user_id,
    email: row.email,
    phone: row.phone,
    firstName: row.first_name,
    lastName: row.last_name,
    avatarUrl: row.avatar_url,
    lastUsedAt: row.last_used_at,
  }));
}

/** The user removes an account from the device's list; false when there is no such live entry. */
export async function removeSavedAccount(
  db: Queryable,
  deviceBindingId: string,
  savedAccountId: string,
  now: Date,
): Promise<boolean> {
  if (!isUuid(savedAccountId)) return false;
  const changed = await db('saved_accounts')
    .where({ id: savedAccountId, device_binding_id: deviceBindingId })
    .whereNull('revoked_at')
    .update({ revoked_at: now });
  return changed > 0;
}

/**
 * The account leaves the list of every device but the kept session's (signed out everywhere). A stolen
 * device cookie then neither lists the account nor counts as one of the owner's devices for the
 * lockout ladder (brute-force/login-source.ts); the owner's devices are known again at their next
 * sign-in, which saves the account anew.
 */
export async function unlistAccountFromDevices(
  db: Queryable,
  userId: string,
  keptSessionId: string | undefined,
  now: Date,
): Promise<void> {
  await db('saved_accounts')
    .where({ user_id: userId })
    .whereNull('revoked_at')
    .modify((query) => {
      if (keptSessionId === undefined) return;
      query.whereNotIn(
        'device_binding_id',
        db('sessions')
          .where({ id: keptSessionId })
          .whereNotNull('device_binding_id')
          .select('device_binding_id'),
      );
    })
    .update({ revoked_at: now });
}
