import type { Queryable } from '../../db/database.js';
import {
  claimExpiry,
  inFlightAfterRelease,
  liveInFlight,
  refusalOf,
  type ClaimResult,
} from './attempt-claims.js';

/**
 * The account-wide bound on guessing (OWASP ASVS 4 2.2.1: at most 100 failed attempts an hour per
 * account). The per-source ladder alone would let an attacker with many addresses guess on; this counts
 * the failures of every UNKNOWN source of an account (not a device the account signed in on before,
 * no second factor proven first) in a window that starts at the first of them. The 100th closes the
 * account to unknown sources for an hour from that failure, so no rolling hour sees more than 100;
 * the owner still gets in from a known device or with a second factor (login-protection.ts).
 */
export const accountFailureLimit = { failures: 100, windowSeconds: 60 * 60 } as const;

const windowStartFor = (now: Date) => new Date(now.getTime() - accountFailureLimit.windowSeconds * 1000);

/** SQL: the failures of row `t` in the window still open at `:now`. */
const failuresInWindow = `(case when t.window_started_at <= :windowStart then 0 else t.failures end)`;

/**
 * Claims a place for an attempt from an unknown source (attempt-claims.ts), in ONE upsert: refused while
 * the account is closed to unknown sources, or while failures + claims in flight reach the bound.
 */
export async function claimAccountAttempt(db: Queryable, account: string, now: Date): Promise<ClaimResult> {
  const result = await db.raw(
    `insert into login_account_failures as t
       (account, window_started_at, failures, in_flight, in_flight_expires_at)
     values (:account, :now, 0, 1, :expires)
     on conflict (account) do update set
       window_started_at = case when t.window_started_at <= :windowStart then excluded.window_started_at
                                else t.window_started_at end,
       failures = ${failuresInWindow},
       in_flight = ${liveInFlight('t')} + 1,
       in_flight_expires_at = excluded.in_flight_expires_at
     where (t.locked_until is null or t.locked_until <= :now)
       and ${failuresInWindow} + ${liveInFlight('t')} < :limit
     returning failures`,
    {
      account,
      now,
      expires: claimExpiry(now),
      windowStart: windowStartFor(now),
      limit: accountFailureLimit.failures,
    },
  );
  if ((result.rows as unknown[]).length > 0) return { granted: true };
  const row: { locked_until: Date | null } | undefined = await db('login_account_failures')
    .where({ account })
    .first('locked_until');
  return { granted: false, ...refusalOf(row, now) };
}

/**
 * A failure from an unknown source gives back its claim and counts, in ONE upsert; the failure that
 * reaches the bound closes the account to unknown sources for an hour. Answers that lock, if this
 * failure set it.
 */
export async function recordAccountFailure(
  db: Queryable,
  account: string,
  now: Date,
): Promise<{ failures: number; lockedUntil: Date | undefined }> {
  const lockedUntil = new Date(now.getTime() + accountFailureLimit.windowSeconds * 1000);
  const result = await db.raw(
    `insert into login_account_failures as t (account, window_started_at, failures, in_flight)
     values (:account, :now, 1, 0)
     on conflict (account) do update set
       window_started_at = case when t.window_started_at <= :windowStart then excluded.window_started_at
                                else t.window_started_at end,
       failures = ${failuresInWindow} + 1,
       in_flight = ${inFlightAfterRelease('t')},
       locked_until = case
         when ${failuresInWindow} + 1 >= :limit and (t.locked_until is null or t.locked_until <= :now)
           then cast(:lockedUntil as timestamptz)
         else t.locked_until
       end
     returning failures`,
    {
      account,
      now,
      windowStart: windowStartFor(now),
      limit: accountFailureLimit.failures,
      lockedUntil,
    },
  );
  const failures = (result.rows as { failures: number }[])[0]!.failures;
  return { failures, lockedUntil: failures === accountFailureLimit.failures ? lockedUntil : undefined };
}

/**
 * Gives back a claim: after a success (which does not wipe the count: a distributed attacker must not
 * win 100 more guesses each time the owner signs in) or a refusal by another counter.
 */
export async function releaseAccountClaim(db: Queryable, account: string, now: Date): Promise<void> {
  await db.raw(
    `update login_account_failures as t set in_flight = ${inFlightAfterRelease('t')} where account = :account`,
    { account, now },
  );
}

/** The account's count and lock go (its owner proved control of a contact). */
export async function clearAccountFailures(db: Queryable, account: string): Promise<void> {
  await db('login_account_failures').where({ account }).delete();
}

/** Windows over and locks expired: the hourly cleanup. */
export async function deleteIdleAccountFailures(db: Queryable, now: Date): Promise<number> {
  return db('login_account_failures')
    .where('window_started_at', '<', windowStartFor(now))
    .where((query) => query.whereNull('locked_until').orWhere('locked_until', '<', now))
    .delete();
}
