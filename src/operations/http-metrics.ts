import type { Middleware } from 'koa';
import type { ServiceMetrics } from './service-metrics.js';

/**
 * Counts and times every answer by route: the pattern a router matched (`/api/v2/platform/:entity`),
 * else one of the engine's own paths, else `unmatched`, so a scan of random paths can't grow the
 * label set.
 */
export function httpMetrics(metrics: ServiceMetrics, enginePaths: ReadonlySet<string>): Middleware {
  return async function countRequest(ctx, next) {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const route =
        typeof matched === 'string' ? matched : enginePaths.has(ctx.path) ? ctx.path : 'unmatched';
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.httpRequests.inc({ method: ctx.method, route, status: String(ctx.status) });
      metrics.httpDuration.observe({ method: ctx.method, route }, seconds);
    }
  };
}
