import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import { claimExpiry, type ClaimRefusal, type CounterClaim, type CounterRelease } from './attempt-claims.js';

/**
 * SQL: each counter's change as a CTE, in order, each gated on the one before. The gate makes the
 * order real: a CTE's statement pulls the previous CTE's row before it touches its own row, so the
 * rows are locked in the order given (ladder, account, IP) by every claim and every release, and two
 * of these statements never wait for each other crosswise (a deadlock). The whole statement is one
 * transaction: its row locks are held until it ends, which is microseconds inside PostgreSQL.
 */
function chained<Counter extends { name: string; sql(gate: string): string }>(
  counters: Counter[],
  gateAfter: (previous: string) => string,
): string {
  return counters
    .map((counter, index) => {
      const gate = index === 0 ? 'true' : gateAfter(counters[index - 1]!.name);
      return `${counter.name} as (${counter.sql(gate)})`;
    })
    .join(',\n');
}

const bindingsOf = (counters: { bindings: Record<string, unknown> }[]) =>
  Object.assign({}, ...counters.map((counter) => counter.bindings)) as Record<string, unknown>;

/**
 * A value the caller reads right after a granted claim (the password hash to check), made in the
 * claim's statement: one round trip for both. `sql` is a scalar subquery with its own named bindings.
 */
export interface ReadAlongside {
  sql: string;
  bindings: Record<string, unknown>;
}

export type ClaimOutcome = { refusal: ClaimRefusal } | { refusal: undefined; read: unknown };

/**
 * Claims a login attempt's place on each of its counters (attempt-claims.ts) in ONE statement, where
 * claiming them one after the other took one statement each. A counter is claimed only when every
 * counter before it granted its place; the first to refuse stops the chain. The places granted before
 * a refusal are then given back (one statement each, as before: refusals are the rare path) and the
 * refusal answered: locked until a time, or busy. Each counter's own condition is the one its
 * single-counter upsert checked, evaluated on its row's latest version under the row lock.
 */
export async function claimTogether(
  db: Queryable,
  claims: CounterClaim[],
  now: Date,
  alongside?: ReadAlongside,
): Promise<ClaimOutcome> {
  if (claims.length === 0 && !alongside) return { refusal: undefined, read: undefined };
  const columns = [
    ...claims.map((claim) => `(select count(*) from ${claim.name}) as ${claim.name}`),
    ...(alongside ? [`(${alongside.sql}) as read_alongside`] : []),
  ];
  const result = await db.raw(
    `${claims.length > 0 ? `with ${chained(claims, (previous) => `exists (select 1 from ${previous})`)}` : ''}
     select ${columns.join(', ')}`,
    { ...bindingsOf(claims), ...alongside?.bindings, now, expires: claimExpiry(now) },
  );
  const row = (result.rows as Record<string, unknown>[])[0]!;
  const refused = claims.findIndex((claim) => Number(row[claim.name]) === 0);
  if (refused < 0) return { refusal: undefined, read: row.read_alongside ?? undefined };
  const refusal = await claims[refused]!.refusal(db);
  for (const held of claims.slice(0, refused)) await held.release(db);
  return { refusal };
}

const releaseGate = (previous: string) => `(select count(*) from ${previous}) >= 0`;

/**
 * Gives back a login attempt's places (with the success's reset of the ladder) in ONE statement, in the
 * same order as claimTogether locks them. Every change runs: the gate only orders them.
 */
export async function releaseTogether(db: Queryable, releases: CounterRelease[], now: Date): Promise<void> {
  if (releases.length === 0) return;
  await db.raw(`with ${chained(releases, releaseGate)} select 1`, { ...bindingsOf(releases), now });
}

/**
 * The releases of releaseTogether as CTEs of another statement (the success's audit event): the
 * counters and the event in one round trip, the rows locked in the same order.
 */
export function withReleases(db: Queryable, releases: CounterRelease[], now: Date) {
  return (query: Knex.QueryBuilder): Knex.QueryBuilder =>
    releases.reduce(
      (withPrevious, release, index) =>
        withPrevious.with(
          release.name,
          db.raw(release.sql(index === 0 ? 'true' : releaseGate(releases[index - 1]!.name)), {
            ...release.bindings,
            now,
          }),
        ),
      query,
    );
}
