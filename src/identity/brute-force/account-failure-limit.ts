import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import {
  inFlightAfterRelease,
  liveInFlight,
  type CounterClaim,
  type CounterRelease,
} from './attempt-claims.js';
import { releaseTogether } from './claim-together.js';
import { defaults } from '../../defaults.js';

/**
 * The account-wide bound on guessing (OWASP ASVS 4 2.2.1: at most 100 failed attempts an hour per
 * account). The per-source ladder alone would let an attacker with many addresses guess on; this
 * counts the failures of an account's UNKNOWN sources (an IP: not a device the account signed in on
 * before, not its session, no other factor proven first) in a sliding hour, kept as the times of the
 * failures (at most 100). At 100 the account is closed to unknown sources until the oldest of them is
 * an hour old, so no 60 minutes ever see more than 100. The owner still gets in from a known device or
 * with a second factor (login-protection.ts).
 */
export const accountFailureLimit = defaults.lockout.accountFailures;

const hourBefore = (now: Date) => new Date(now.getTime() - accountFailureLimit.windowSeconds * 1000);

/** SQL: row `t`'s failures of the last hour, oldest first. */
const recentFailures = `array(select f from unnest(t.failure_times) f where f > :hourAgo order by f)`;

/**
 * Claims a place for an attempt from an unknown source (attempt-claims.ts), as one upsert of the claim
 * statement (claim-together.ts): refused while failures of the last hour + claims in flight reach the
 * bound.
 */
export function accountClaim(account: string, now: Date): CounterClaim {
  const hourAgo = hourBefore(now);
  return {
    name: 'account_claim',
    sql: (
      gate,
    ) => `insert into login_account_failures as t (account, in_flight, in_flight_expires_at, updated_at)
       select cast(:accountWide as text), 1, cast(:expires as timestamptz), cast(:now as timestamptz)
       where ${gate}
       on conflict (account) do update set
         failure_times = ${recentFailures},
         in_flight = ${liveInFlight('t')} + 1,
         in_flight_expires_at = excluded.in_flight_expires_at,
         updated_at = excluded.updated_at
       where cardinality(${recentFailures}) + ${liveInFlight('t')} < :accountLimit
       returning 1`,
    bindings: { accountWide: account, hourAgo, accountLimit: accountFailureLimit.failures },
    async refusal(db) {
      const counted = await db.raw(
        `select cardinality(${recentFailures}) as failures, (${recentFailures})[1] as oldest
         from login_account_failures t where account = :account`,
        { account, hourAgo },
      );
      const row = (counted.rows as { failures: number; oldest: Date | null }[])[0];
      if (!row?.oldest || row.failures < accountFailureLimit.failures) return { busy: true };
      return { lockedUntil: closedUntil(row.oldest) };
    },
    release: (db) => releaseTogether(db, [accountRelease(account)], now),
  };
}

/** When the oldest of the last hour's failures leaves the window. */
function closedUntil(oldest: Date): Date {
  return new Date(oldest.getTime() + accountFailureLimit.windowSeconds * 1000);
}

/**
 * A failure from an unknown source gives back its claim and is counted, in ONE upsert. Answers the
 * failures of the last hour and, when this one reached the bound, until when the account is closed.
 */
export async function recordAccountFailure(
  db: Queryable,
  account: string,
  now: Date,
): Promise<{ failures: number; lockedUntil: Date | undefined }> {
  const result = await db.raw(
    `insert into login_account_failures as t (account, failure_times, in_flight, updated_at)
     values (:account, array[cast(:now as timestamptz)], 0, :now)
     on conflict (account) do update set
       failure_times = ${recentFailures} || cast(:now as timestamptz),
       in_flight = ${inFlightAfterRelease('t')},
       updated_at = excluded.updated_at
     returning cardinality(failure_times) as failures, failure_times[1] as oldest`,
    { account, now, hourAgo: hourBefore(now) },
  );
  const { failures, oldest } = (result.rows as { failures: number; oldest: Date }[])[0]!;
  const reached = failures === accountFailureLimit.failures;
  return { failures, lockedUntil: reached ? closedUntil(oldest) : undefined };
}

/**
 * Gives back a claim (after a success, or a refusal by another counter), as one update of the release
 * statement (claim-together.ts). A success does not wipe the count: a distributed attacker must not
 * win 100 more guesses each time the owner signs in.
 */
export function accountRelease(account: string): CounterRelease {
  return {
    name: 'account_release',
    sql: (gate) => `update login_account_failures as t set in_flight = ${inFlightAfterRelease('t')}
       where account = :accountWide and ${gate}
       returning 1`,
    bindings: { accountWide: account },
  };
}

/** The account's count goes (its owner proved control of a contact). */
export async function clearAccountFailures(db: Queryable, account: string): Promise<void> {
  await db('login_account_failures').where({ account }).delete();
}

/**
 * Rows untouched for an hour (every failure they hold is older), of `query` on login_account_failures:
 * what the hourly cleanup deletes.
 */
export function idleAccountFailures(query: Knex.QueryBuilder, now: Date): Knex.QueryBuilder {
  return query.where('updated_at', '<', hourBefore(now));
}
