import type { Queryable } from '../../db/database.js';
import { lockoutSubject } from '../brute-force/account-lockout.js';
import { isUuid } from '../uuid.js';
import { userFromRow, type User, type UserRow, type UserStatus } from './user.js';
import { announceUserStatus } from './user-status-changes.js';

export interface UserSearch {
  /** Part of the email, phone or name (case-insensitive), or the user's id. */
  search?: string | undefined;
  status?: UserStatus | undefined;
  limit: number;
  offset: number;
}

/** Users for administrators, newest first, with how many match. */
export async function findUsers(db: Queryable, query: UserSearch): Promise<{ users: User[]; total: number }> {
  const matching = () => {
    const builder = db<UserRow>('users');
    if (query.status) builder.where({ status: query.status });
    const search = query.search;
    if (search) {
      const pattern = `%${search.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
      builder.where((where) => {
        where
          .whereILike('email', pattern)
          .orWhereILike('phone', pattern)
          .orWhereILike('given_name', pattern)
          .orWhereILike('family_name', pattern)
          .orWhereILike('preferred_username', pattern);
        if (isUuid(search)) where.orWhere({ id: search });
      });
    }
    return builder;
  };
  const [rows, [counted]] = await Promise.all([
    matching()
      .orderBy([{ column: 'created_at', order: 'desc' }, 'id'])
      .limit(query.limit)
      .offset(query.offset)
      .select('*'),
    matching().select(db.raw('count(*)::int as total')) as unknown as Promise<{ total: number }[]>,
  ]);
  return { users: (rows as UserRow[]).map(userFromRow), total: counted?.total ?? 0 };
}

/**
 * Sets a user's status; false when there is no such user. This node's token checks learn it at once,
 * inside a transaction before the commit: should it fail, a disabled user's tokens are refused here a
 * few seconds early, never accepted late.
 */
export async function setUserStatus(
  db: Queryable,
  userId: string,
  status: UserStatus,
  now: Date,
): Promise<boolean> {
  if (!isUuid(userId)) return false;
  const changed = (await db('users').where({ id: userId }).update({ status, updated_at: now })) > 0;
  if (changed) announceUserStatus(userId, status);
  return changed;
}

/** The sources the account is locked out from right now (the lockout ladder). */
export async function lockedSources(db: Queryable, userId: string, now: Date): Promise<number> {
  const [row] = (await db('login_source_lockouts')
    .where({ account: lockoutSubject({ userId }) })
    .where('locked_until', '>', now)
    .select(db.raw('count(*)::int as locked'))) as { locked: number }[];
  return row?.locked ?? 0;
}

/**
 * Lifts every lockout of the account: the per-source ladders and the account-wide failure window start
 * again from zero. Answers how many locked sources were lifted.
 */
export async function unlockUser(db: Queryable, userId: string, now: Date): Promise<number> {
  const account = lockoutSubject({ userId })!;
  const lifted = await lockedSources(db, userId, now);
  await db('login_source_lockouts').where({ account }).delete();
  await db('login_account_failures').where({ account }).delete();
  return lifted;
}
