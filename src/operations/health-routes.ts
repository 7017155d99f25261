import Router from '@koa/router';
import type { Database } from '../db/database.js';
import { pendingMigrations } from '../db/migrate.js';
import type { EventBus } from '../events/event-bus.js';

export interface ReadinessDeps {
  db: Database;
  bus: EventBus;
}

/** What GET /readyz found: each check `ok` or why not. */
export type ReadinessChecks = Record<'database' | 'migrations' | 'eventBus', string>;

/**
 * GET /healthz: the process answers (liveness; never touches the database, so a database outage does
 * not get the process restarted). GET /readyz: this node can serve (readiness): the database answers,
 * its schema has every migration this version knows, the event bus is connected. 503 with the failed
 * checks otherwise, so a load balancer takes the node out until it recovers.
 */
export function healthRoutes(deps: ReadinessDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const checks = await checkReadiness(deps);
    const ready = Object.values(checks).every((check) => check === 'ok');
    ctx.set('Cache-Control', 'no-store');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not_ready', checks };
  });
  return router;
}

export async function checkReadiness(deps: ReadinessDeps): Promise<ReadinessChecks> {
  const database = await deps.db.raw('select 1').then(
    () => 'ok',
    (error: Error) => `unreachable: ${error.message}`,
  );
  const migrations =
    database === 'ok'
      ? await pendingMigrations(deps.db).then(
          (pending) => (pending.length === 0 ? 'ok' : `pending: ${pending.join(', ')}`),
          (error: Error) => `unknown: ${error.message}`,
        )
      : 'unknown: the database is unreachable';
  const eventBus = (deps.bus.connected?.() ?? true) ? 'ok' : 'disconnected';
  return { database, migrations, eventBus };
}
