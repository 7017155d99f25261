import type { Queryable } from '../../db/database.js';
import { defaults } from '../../defaults.js';

/**
 * Attempts in flight: a login attempt claims a place on each counter that judges it BEFORE its password
 * or code is checked, and gives it back with the outcome (a failure, or a success). The counters grant
 * a claim only while failures + claims in flight stay below the next threshold, so parallel wrong
 * passwords can't get more tries than the rules allow; and since a claim is not a failure, parallel
 * right passwords are not refused while the count is below the threshold.
 *
 * A claim lapses after `claimLifetimeSeconds` (the process died mid-check): the counters' SQL counts
 * `in_flight` only while `in_flight_expires_at` is in the future. Every change of a counter is atomic, and
 * an attempt's claims on all its counters are ONE statement, as are their releases (claim-together.ts).
 */
export const claimLifetimeSeconds = defaults.lockout.claimLifetimeSeconds;

/** An attempt that could not claim its place: locked until a time, or busy (others in flight). */
export type ClaimRefusal = { lockedUntil: Date } | { busy: true };

/** SQL: the claims of row `alias` still in flight at `:now`. */
export const liveInFlight = (alias: string) =>
  `(case when ${alias}.in_flight_expires_at > :now then ${alias}.in_flight else 0 end)`;

/** SQL: the row's claims in flight once one of them is given back. */
export const inFlightAfterRelease = (alias: string) => `greatest(${liveInFlight(alias)} - 1, 0)`;

export const claimExpiry = (now: Date) => new Date(now.getTime() + claimLifetimeSeconds * 1000);

/** The refusal of a claim that changed no row: locked if the row's lock is in force, else busy. */
export function refusalOf(row: { locked_until: Date | null } | undefined, now: Date): ClaimRefusal {
  if (row?.locked_until && row.locked_until > now) return { lockedUntil: row.locked_until };
  return { busy: true };
}

/**
 * One counter's part in claiming a login attempt's places in ONE statement (claim-together.ts): the
 * counter's claim as a data-modifying CTE body that changes its row only while `gate` (an SQL
 * condition) holds and returns one row when the place is granted, its named bindings (unique to the
 * counter, except `:now` and `:expires`), and what to do after a refusal.
 */
export interface CounterClaim {
  /** A CTE name, unique among the counters of one statement. */
  name: string;
  sql(gate: string): string;
  bindings: Record<string, unknown>;
  /** Why this counter refused (read after the statement): locked until a time, or busy. */
  refusal(db: Queryable): Promise<ClaimRefusal>;
  /** Gives the place back without an outcome (a counter after it refused). */
  release(db: Queryable): Promise<void>;
}

/** One counter's part in giving back a login attempt's places in ONE statement. */
export interface CounterRelease {
  name: string;
  sql(gate: string): string;
  bindings: Record<string, unknown>;
}
