import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import type { Database, Queryable } from '../db/database.js';
import { retiredKeyPublishedForMs } from '../keys/signing-keys.js';
import type { Logger } from '../logger.js';

/**
 * One part of the cleanup: removes records of one kind that are useless now. A task that answers
 * `cleanupBatchRows` (a full batch) is run again, in a transaction of its own, until it answers less.
 */
export interface CleanupTask {
  name: string;
  run(db: Queryable, now: Date): Promise<unknown>;
}

/**
 * The most rows one statement of the cleanup deletes. The embedded database runs on the service's own
 * thread and a transaction holds its only connection: deleting a table's expired rows in one statement
 * (a flood of sign-in page views leaves a row each) held every request of the process until it was
 * done. In batches, each its own transaction, requests run between them.
 */
export const cleanupBatchRows = 2_000;

/** Deletes the rows of `table` that `expired` selects, a batch at a time; reports how many. */
export function expiredRows(
  table: string,
  expired: (query: Knex.QueryBuilder, now: Date) => Knex.QueryBuilder,
  name = table,
): CleanupTask {
  return {
    name,
    // ctid: the row's address, which every table has, whatever its key.
    run: (db, now) =>
      db(table)
        .whereIn('ctid', expired(db(table).select('ctid'), now).limit(cleanupBatchRows))
        .delete(),
  };
}

/**
 * Gives the rows of `table` that `selected` selects the values `changes`, a batch at a time, as
 * expiredRows deletes; reports how many. `selected` must no longer select a row once it is changed.
 */
export function rowsToChange(
  name: string,
  table: string,
  selected: (query: Knex.QueryBuilder, now: Date) => Knex.QueryBuilder,
  changes: Record<string, unknown>,
): CleanupTask {
  return {
    name,
    run: (db, now) =>
      db(table)
        .whereIn('ctid', selected(db(table).select('ctid'), now).limit(cleanupBatchRows))
        .update(changes),
  };
}

export const cleanupTasks: CleanupTask[] = [
  expiredRows('authorization_codes', (query, now) => query.where('expires_at', '<', now)),
  // Revoked and rotated-out refresh tokens stay until their expiry: reuse detection needs them.
  expiredRows('oauth_refresh_tokens', (query, now) => query.where('expires_at', '<', now)),
  // Engine sessions, interactions, grants, replay records.
  expiredRows('oidc_payloads', (query, now) => query.where('expires_at', '<', now)),
  // Which grants an engine session named: kept as long as the session (engine-session-grants.ts).
  expiredRows('engine_session_grants', (query, now) => query.where('expires_at', '<', now)),
  // Which session a browser held before: kept while an engine session of its uid is (engine-session-predecessors.ts).
  expiredRows('engine_session_predecessors', (query) =>
    query.whereNotExists((session) =>
      session
        .from('oidc_payloads')
        .where({ model: 'Session' })
        .whereRaw('oidc_payloads.uid = engine_session_predecessors.session_uid'),
    ),
  ),
  // Revoked grants outlive every access token issued from them by then.
  expiredRows('oauth_revoked_grants', (query, now) => query.where('expires_at', '<', now)),
  expiredRows('auth_flow_sessions', (query, now) => query.where('expires_at', '<', now)),
  // Inbound-login tokens live a minute (docs/inbound-sso.md).
  expiredRows('inbound_login_tokens', (query, now) => query.where('expires_at', '<', now)),
  // Provider answers waiting for a funnel's oauth step live ten minutes (docs/federation.md).
  expiredRows('federation_step_results', (query, now) => query.where('expires_at', '<', now)),
  // QR sign-in requests live two minutes, used or not (docs/plugins.md, the `qr` step).
  expiredRows('qr_login_requests', (query, now) => query.where('expires_at', '<', now)),
  // Onboardings after a registration live half an hour (src/identity/onboarding/onboardings.ts).
  expiredRows('onboardings', (query, now) => query.where('expires_at', '<', now)),
  // A client deletion is news for the client caches' change feed; an hour on, no cache holds the client.
  expiredRows('deleted_oauth_clients', (query, now) =>
    query.where('deleted_at', '<', new Date(now.getTime() - 60 * 60 * 1000)),
  ),
  expiredRows('rate_limits', (query, now) => query.where('expire', '<', now.getTime())),
  expiredRows('signing_keys', (query, now) =>
    query.where('retired_at', '<', new Date(now.getTime() - retiredKeyPublishedForMs)),
  ),
];

export const cleanupIntervalMs = 60 * 60 * 1000;
// Any constant: nodes agree on it, so only one runs the cleanup at a time.
const cleanupLockKey = 4_711_2026;

/**
 * Deletes expired codes, tokens, sessions, interactions, flow sessions and rate-limit counters (and
 * whatever other tasks are given), a batch per transaction (cleanupBatchRows). Safe when several nodes
 * run it: a transaction-scoped advisory lock lets one node do each batch; a node that finds it taken
 * leaves the rest to the node holding it. Returns what each task removed, or undefined when another
 * node held the lock from the start.
 */
export async function cleanupExpiredRecords(
  db: Database,
  now: Date,
  tasks: CleanupTask[] = cleanupTasks,
): Promise<Record<string, unknown> | undefined> {
  const removed: Record<string, unknown> = {};
  for (const task of tasks) {
    for (;;) {
      const batch = await db.transaction(async (trx) => {
        const { rows } = (await trx.raw('select pg_try_advisory_xact_lock(?) as locked', [
          cleanupLockKey,
        ])) as { rows: { locked: boolean }[] };
        return rows[0]?.locked ? { result: await task.run(trx, now) } : undefined;
      });
      if (!batch) return Object.keys(removed).length > 0 ? removed : undefined;
      const { result } = batch;
      const before = removed[task.name];
      removed[task.name] =
        typeof result === 'number' && typeof before === 'number' ? before + result : result;
      if (result !== cleanupBatchRows) break;
      // Let the requests waiting for the database go first.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return removed;
}

/** Runs the cleanup every hour (and once a minute after start) until stopped. */
export function scheduleCleanup(
  db: Database,
  clock: Clock,
  logger: Logger,
  tasks: CleanupTask[] = cleanupTasks,
): { stop(): void } {
  const run = async () => {
    try {
      const deleted = await cleanupExpiredRecords(db, clock.now(), tasks);
      if (deleted) logger.info({ deleted }, 'expired records cleaned up');
    } catch (error) {
      logger.error({ err: error }, 'cleanup of expired records failed');
    }
  };
  const first = setTimeout(run, 60_000);
  const hourly = setInterval(run, cleanupIntervalMs);
  first.unref();
  hourly.unref();
  return {
    stop() {
      clearTimeout(first);
      clearInterval(hourly);
    },
  };
}
