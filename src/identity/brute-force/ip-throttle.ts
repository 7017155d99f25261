import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import {
  inFlightAfterRelease,
  liveInFlight,
  refusalOf,
  type CounterClaim,
  type CounterRelease,
} from './attempt-claims.js';
import { releaseTogether } from './claim-together.js';
import { defaults } from '../../defaults.js';

/**
 * IP throttling (spec: Limits): failed logins from one IP, any accounts, in a 10-minute window. The
 * 20th failure makes the IP wait 1 minute; the 50th blocks it for 30 minutes. The window is fixed
 * (it starts at the first attempt), which a 30-minute block always outlasts. The `ip` keyed on is the
 * client's address block (RequestInfo.addressBlock): an IPv6 client counts as its /64.
 */
export const ipThrottle = defaults.lockout.ipThrottle;

const windowStartFor = (now: Date) => new Date(now.getTime() - ipThrottle.windowSeconds * 1000);

/** SQL: the failures of row `t` in the window still open at `:now`. */
const failuresInWindow = `(case when t.window_started_at <= :windowStart then 0 else t.failures end)`;

/**
 * Claims a place for one attempt from `ip` (attempt-claims.ts), as one upsert of the claim statement
 * (claim-together.ts): refused while the IP waits or is blocked, or while failures + claims in flight
 * reach the next threshold (20, then 50).
 */
export function ipClaim(ip: string, now: Date): CounterClaim {
  const { delay, block } = ipThrottle;
  return {
    name: 'ip_claim',
    sql: (
      gate,
    ) => `insert into login_ip_throttle as t (ip, window_started_at, failures, in_flight, in_flight_expires_at)
       select cast(:ip as text), cast(:now as timestamptz), 0, 1, cast(:expires as timestamptz)
       where ${gate}
       on conflict (ip) do update set
         window_started_at = case when t.window_started_at <= :windowStart then excluded.window_started_at
                                  else t.window_started_at end,
         failures = ${failuresInWindow},
         locked_until = case when t.window_started_at <= :windowStart then null else t.locked_until end,
         in_flight = ${liveInFlight('t')} + 1,
         in_flight_expires_at = excluded.in_flight_expires_at
       where (t.locked_until is null or t.locked_until <= :now)
         and ${failuresInWindow} + ${liveInFlight('t')} < case
           when ${failuresInWindow} < :delayFailures then :delayFailures
           when ${failuresInWindow} < :blockFailures then :blockFailures
           else ${failuresInWindow} + 1
         end
       returning 1`,
    bindings: {
      ip,
      windowStart: windowStartFor(now),
      delayFailures: delay.failures,
      blockFailures: block.failures,
    },
    async refusal(db) {
      const row: { locked_until: Date | null } | undefined = await db('login_ip_throttle')
        .where({ ip })
        .first('locked_until');
      return refusalOf(row, now);
    },
    release: (db) => releaseTogether(db, [ipRelease(ip)], now),
  };
}

/**
 * A failed attempt from `ip` gives back its claim and counts, in ONE upsert: the 20th failure of the
 * window sets the 1-minute wait (once: a wait after every failure past 20 would make the 50-failure
 * rule unreachable in 10 minutes), the 50th the 30-minute block. Answers the lock this failure set.
 */
export async function recordIpFailure(
  db: Queryable,
  ip: string,
  now: Date,
): Promise<{ failures: number; lockedUntil: Date | undefined }> {
  const lockAt = (seconds: number) => new Date(now.getTime() + seconds * 1000);
  const { delay, block } = ipThrottle;
  const result = await db.raw(
    `insert into login_ip_throttle as t (ip, window_started_at, failures, in_flight)
     values (:ip, :now, 1, 0)
     on conflict (ip) do update set
       window_started_at = case when t.window_started_at <= :windowStart then excluded.window_started_at
                                else t.window_started_at end,
       failures = ${failuresInWindow} + 1,
       in_flight = ${inFlightAfterRelease('t')},
       locked_until = case
         when ${failuresInWindow} + 1 >= :blockFailures then cast(:blockLock as timestamptz)
         when ${failuresInWindow} + 1 = :delayFailures then cast(:delayLock as timestamptz)
         when t.locked_until > :now then t.locked_until
         else null
       end
     returning failures`,
    {
      ip,
      now,
      windowStart: windowStartFor(now),
      delayFailures: delay.failures,
      delayLock: lockAt(delay.lockSeconds),
      blockFailures: block.failures,
      blockLock: lockAt(block.lockSeconds),
    },
  );
  const failures = (result.rows as { failures: number }[])[0]!.failures;
  const lockedUntil =
    failures >= block.failures
      ? lockAt(block.lockSeconds)
      : failures === delay.failures
        ? lockAt(delay.lockSeconds)
        : undefined;
  return { failures, lockedUntil };
}

/**
 * Gives back a claim (after a success, or a refusal by another counter: nothing was counted), as one
 * update of the release statement (claim-together.ts).
 */
export function ipRelease(ip: string): CounterRelease {
  return {
    name: 'ip_release',
    sql: (gate) => `update login_ip_throttle as t set in_flight = ${inFlightAfterRelease('t')}
       where ip = :ip and ${gate}
       returning 1`,
    bindings: { ip },
  };
}

/** Windows over and locks expired, of `query` on login_ip_throttle: what the hourly cleanup deletes. */
export function idleIpThrottles(query: Knex.QueryBuilder, now: Date): Knex.QueryBuilder {
  return query
    .where('window_started_at', '<', windowStartFor(now))
    .where((idle) => idle.whereNull('locked_until').orWhere('locked_until', '<', now));
}
