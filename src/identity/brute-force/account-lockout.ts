import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import {
  inFlightAfterRelease,
  liveInFlight,
  refusalOf,
  type CounterClaim,
  type CounterRelease,
} from './attempt-claims.js';
import { currentSettings } from '../../http/request-settings.js';

/**
 * The account lockout ladder (spec: Limits), counted per account AND source (the IP, or a device the
 * account signed in on before: login-source.ts): after 5 failed logins in a row from one source, its
 * next attempt waits 30 s, after 10 it waits 5 minutes, after 20 it is blocked for 30 minutes. Each
 * further failure at a rung imposes that rung's wait again; a success from the source resets its count.
 * Failures from one source never lock another, so an attacker can lock out only themself.
 */
export function lockoutLadder(): readonly { failures: number; lockSeconds: number }[] {
  // The service's (settings.lockout.ladder, highest rung first).
  return currentSettings().lockout.ladder;
}

const firstRung = () => lockoutLadder()[lockoutLadder().length - 1]!.failures;

export function lockSecondsAfter(failures: number): number {
  return lockoutLadder().find((rung) => failures >= rung.failures)?.lockSeconds ?? 0;
}

/** The account key: the account, or for an identifier no account has, the identifier itself. */
export function lockoutSubject(who: { userId?: string | undefined; identifier?: string | undefined }) {
  if (who.userId) return `user:${who.userId}`;
  if (who.identifier) return `identifier:${who.identifier.trim().toLowerCase()}`;
  return undefined;
}

/** One ladder: an account seen from one source. */
export interface LadderKey {
  account: string;
  source: string;
}

/**
 * Claims a place for one attempt (attempt-claims.ts), as one upsert of the claim statement
 * (claim-together.ts): refused while the source is locked, or while failures + claims in flight have
 * reached the count that locks next (5 below the first rung; from there on every failure locks, so one
 * attempt at a time).
 */
export function ladderClaim(key: LadderKey, now: Date): CounterClaim {
  return {
    name: 'ladder_claim',
    sql: (gate) => `insert into login_source_lockouts as l
         (account, source, consecutive_failures, in_flight, in_flight_expires_at, updated_at)
       select cast(:ladderAccount as text), cast(:ladderSource as text), 0, 1,
         cast(:expires as timestamptz), cast(:now as timestamptz)
       where ${gate}
       on conflict (account, source) do update set
         in_flight = ${liveInFlight('l')} + 1,
         in_flight_expires_at = excluded.in_flight_expires_at,
         updated_at = excluded.updated_at
       where (l.locked_until is null or l.locked_until <= :now)
         and l.consecutive_failures + ${liveInFlight('l')} <
           (case when l.consecutive_failures < :ladderFirstRung then :ladderFirstRung
                 else l.consecutive_failures + 1 end)
       returning 1`,
    bindings: { ladderAccount: key.account, ladderSource: key.source, ladderFirstRung: firstRung() },
    async refusal(db) {
      const row: { locked_until: Date | null } | undefined = await db('login_source_lockouts')
        .where(key)
        .first('locked_until');
      return refusalOf(row, now);
    },
    release: (db) => releaseLadderClaim(db, key, now),
  };
}

/**
 * A failed attempt gives back its claim and counts, in ONE upsert that also sets the lock of the rung
 * the new count reaches. Answers the new count and, when this failure set one, the lock.
 */
export async function recordLadderFailure(
  db: Queryable,
  key: LadderKey,
  now: Date,
): Promise<{ failures: number; lockedUntil: Date | undefined }> {
  const lockAt = (seconds: number) => new Date(now.getTime() + seconds * 1000);
  // One `when` per rung, highest first: the lock of the rung the new count reaches.
  const rungs = lockoutLadder();
  const whens = rungs
    .map(
      (_, index) =>
        `when l.consecutive_failures + 1 >= :failures${index} then cast(:lock${index} as timestamptz)`,
    )
    .join('\n         ');
  const rungBindings = Object.fromEntries(
    rungs.flatMap((rung, index) => [
      [`failures${index}`, rung.failures],
      [`lock${index}`, lockAt(rung.lockSeconds)],
    ]),
  );
  const result = await db.raw(
    `insert into login_source_lockouts as l (account, source, consecutive_failures, in_flight, updated_at)
     values (:account, :source, 1, 0, :now)
     on conflict (account, source) do update set
       consecutive_failures = l.consecutive_failures + 1,
       in_flight = ${inFlightAfterRelease('l')},
       locked_until = case
         ${whens}
         else null
       end,
       updated_at = excluded.updated_at
     returning consecutive_failures`,
    { ...key, now, ...rungBindings },
  );
  const failures = (result.rows as { consecutive_failures: number }[])[0]!.consecutive_failures;
  const lockSeconds = lockSecondsAfter(failures);
  return { failures, lockedUntil: lockSeconds > 0 ? lockAt(lockSeconds) : undefined };
}

/**
 * A successful attempt: its claim back, and the source's count starts again from zero; one update of
 * the release statement (claim-together.ts).
 */
export function ladderSuccess(key: LadderKey): CounterRelease {
  return {
    name: 'ladder_success',
    sql: (gate) => `update login_source_lockouts as l set
         consecutive_failures = 0, locked_until = null, in_flight = ${inFlightAfterRelease('l')},
         updated_at = :now
       where account = :ladderAccount and source = :ladderSource and ${gate}
       returning 1`,
    bindings: { ladderAccount: key.account, ladderSource: key.source },
  };
}

/** Gives back a claim without an outcome (the attempt was refused by another counter). */
export async function releaseLadderClaim(db: Queryable, key: LadderKey, now: Date): Promise<void> {
  await db.raw(
    `update login_source_lockouts as l set in_flight = ${inFlightAfterRelease('l')}
     where account = :account and source = :source`,
    { ...key, now },
  );
}

/** Every ladder of an account, whatever the source (its owner proved control of a contact). */
export async function clearAccountLadders(db: Queryable, account: string): Promise<void> {
  await db('login_source_lockouts').where({ account }).delete();
}

/**
 * Ladders idle for a day with no lock in force, of `query` on login_source_lockouts: what the hourly
 * cleanup deletes. A source that has not failed for a day starts again from zero (the account-wide
 * bound still counts what it does).
 */
export function idleLadders(query: Knex.QueryBuilder, cutoff: Date): Knex.QueryBuilder {
  return query
    .where('updated_at', '<', cutoff)
    .where((idle) => idle.whereNull('locked_until').orWhere('locked_until', '<', cutoff));
}
