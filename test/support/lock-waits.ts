import type { Queryable } from '../../src/db/database.js';

/** Statements of this database waiting for a lock now (PostgreSQL: pg_stat_activity). */
async function statementsWaitingForLocks(db: Queryable): Promise<number> {
  const { rows } = (await db.raw(
    `select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`,
  )) as { rows: [{ waiting: number }] };
  return rows[0].waiting;
}

/**
 * Waits until at least `count` statements of the test's database wait for a lock: the request a race
 * test sent has reached the row the test holds, and the test may now act in between. Fails after 5 s;
 * with `done` (that request), stops quietly once it settled without waiting, and the test's
 * assertions say what it did instead.
 */
export async function untilWaitingForLocks(db: Queryable, count = 1, done?: Promise<unknown>): Promise<void> {
  let settled = false;
  void done?.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let tries = 0; tries < 100 && !settled; tries++) {
    if ((await statementsWaitingForLocks(db)) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!settled) throw new Error(`never ${count} statement(s) waiting for a lock`);
}
