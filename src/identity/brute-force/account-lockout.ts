import type { Queryable } from '../../db/database.js';

/**
 * The account lockout ladder (spec: Limits): after 5 failed logins in a row the next attempt waits
 * 30 s, after 10 it waits 5 minutes, after 20 the account is blocked for 30 minutes. Each further
 * failure at a rung imposes that rung's wait again; a successful login resets the count.
 */
export const lockoutLadder = [
  { failures: 20, lockSeconds: 30 * 60 },
  { failures: 10, lockSeconds: 5 * 60 },
  { failures: 5, lockSeconds: 30 },
] as const;

export function lockSecondsAfter(failures: number): number {
  return lockoutLadder.find((rung) => failures >= rung.failures)?.lockSeconds ?? 0;
}

/** The counter key: the account, or for an identifier no account has, the identifier itself. */
export function lockoutSubject(who: { userId?: string | undefined; identifier?: string | undefined }) {
  if (who.userId) return `user:${who.userId}`;
  if (who.identifier) return `identifier:${who.identifier.trim().toLowerCase()}`;
  return undefined;
}

export type AttemptClaim = { allowed: true; failures: number } | { allowed: false; lockedUntil: Date };

/**
 * Claims one login attempt for `subject`, counted as a failure in advance, in ONE upsert: refused (no
 * count) while the subject is locked; otherwise failures + 1, and the lock of the ladder's rung for
 * the new count. Counting before the password is checked is what makes the ladder hold under parallel
 * attempts: the 6th concurrent attempt sees the lock the 5th set. A success then resets the count.
 */
export async function claimAccountAttempt(db: Queryable, subject: string, now: Date): Promise<AttemptClaim> {
  const lockAt = (seconds: number) => new Date(now.getTime() + seconds * 1000);
  const [high, middle, low] = lockoutLadder;
  const result = await db.raw(
    `insert into login_lockouts as l (subject, consecutive_failures, locked_until, updated_at)
     values (?, 1, null, ?)
     on conflict (subject) do update set
       consecutive_failures = l.consecutive_failures + 1,
       locked_until = case
         when l.consecutive_failures + 1 >= ? then cast(? as timestamptz)
         when l.consecutive_failures + 1 >= ? then cast(? as timestamptz)
         when l.consecutive_failures + 1 >= ? then cast(? as timestamptz)
         else null
       end,
       updated_at = excluded.updated_at
     where l.locked_until is null or l.locked_until <= excluded.updated_at
     returning consecutive_failures`,
    [
      subject,
      now,
      high.failures,
      lockAt(high.lockSeconds),
      middle.failures,
      lockAt(middle.lockSeconds),
      low.failures,
      lockAt(low.lockSeconds),
    ],
  );
  const row = (result.rows as { consecutive_failures: number }[])[0];
  if (row) return { allowed: true, failures: row.consecutive_failures };
  const locked: { locked_until: Date | null } | undefined = await db('login_lockouts')
    .where({ subject })
    .first('locked_until');
  // Unlocked between the two statements: let this attempt through uncounted rather than fail.
  if (!locked?.locked_until || locked.locked_until <= now) return { allowed: true, failures: 0 };
  return { allowed: false, lockedUntil: locked.locked_until };
}

/** A successful login: the count starts again from zero. */
export async function resetAccountFailures(db: Queryable, subject: string): Promise<void> {
  await db('login_lockouts').where({ subject }).delete();
}

/**
 * The lock now in force, if it has not been reported yet (each lock is written to the audit log once,
 * however many parallel failures see it).
 */
export async function takeUnreportedLock(
  db: Queryable,
  subject: string,
  now: Date,
): Promise<{ failures: number; lockedUntil: Date } | undefined> {
  const result = await db.raw(
    `update login_lockouts set lock_audited_until = locked_until
     where subject = ? and locked_until > ? and lock_audited_until is distinct from locked_until
     returning consecutive_failures, locked_until`,
    [subject, now],
  );
  const row = (result.rows as { consecutive_failures: number; locked_until: Date }[])[0];
  return row ? { failures: row.consecutive_failures, lockedUntil: row.locked_until } : undefined;
}

/** Rows of identifiers no account has, idle for a day: the hourly cleanup. */
export async function deleteIdleIdentifierLockouts(db: Queryable, cutoff: Date): Promise<number> {
  return db('login_lockouts')
    .where('subject', 'like', 'identifier:%')
    .where('updated_at', '<', cutoff)
    .where((query) => query.whereNull('locked_until').orWhere('locked_until', '<', cutoff))
    .delete();
}
