import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Provider } from 'oidc-provider';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import type { EventBus } from '../events/event-bus.js';
import { healthRoutes } from './health-routes.js';
import { httpMetrics } from './http-metrics.js';
import { metricsRoute } from './metrics-route.js';
import { ServiceMetrics } from './service-metrics.js';

export interface OperationsDeps {
  db: Database;
  clock: Clock;
  bus: EventBus;
  metricsToken: string | undefined;
  /** Paths the engine answers itself, counted by path (the others by their router's pattern). */
  enginePaths: Iterable<string>;
}

export interface Operations {
  metrics: ServiceMetrics;
  /** Counts and times an answer (the request envelope calls it for every request). */
  recordAnswer(ctx: Context, startedNs: bigint): void;
  /** GET /healthz, /readyz, /metrics */
  router: Router;
  /** Counts the engine's successful grants (tokens issued) by grant_type. */
  observeEngine(provider: Provider): void;
}

/** What an operator runs the service with (docs/operations.md): health, readiness, metrics, request ids. */
export function createOperations(deps: OperationsDeps): Operations {
  const metrics = new ServiceMetrics(deps);
  const health = healthRoutes(deps);
  health.use(metricsRoute(metrics, deps.metricsToken).routes());
  return {
    metrics,
    recordAnswer: httpMetrics(metrics, new Set(deps.enginePaths)),
    router: health,
    observeEngine(provider) {
      provider.on('grant.success', (ctx: { oidc?: { params?: { grant_type?: unknown } } }) => {
        const grantType = ctx.oidc?.params?.grant_type;
        metrics.tokensIssued.inc({ grant_type: typeof grantType === 'string' ? grantType : 'unknown' });
      });
    },
  };
}
