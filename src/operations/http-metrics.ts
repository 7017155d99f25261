import type { Context } from 'koa';
import type { ServiceMetrics } from './service-metrics.js';

interface RouteRecorder {
  count(): void;
  time(seconds: number): void;
}

/**
 * Counts and times an answer (the request envelope calls it for every one, with the time the request
 * began) by route: the pattern a router matched (`/api/v2/platform/:entity`),
 * else one of the engine's own paths, else `unmatched`, so a scan of random paths can't grow the
 * label set. The label-bound series of each (method, route, status) are looked up once and kept:
 * prom-client hashes a labels object at every `inc` and `observe` otherwise. The methods Node's
 * parser accepts, our routes and the statuses are finite sets, so the map is too.
 */
export function httpMetrics(
  metrics: ServiceMetrics,
  enginePaths: ReadonlySet<string>,
): (ctx: Context, startedNs: bigint) => void {
  const recorders = new Map<string, RouteRecorder>();
  const recorderOf = (method: string, route: string, status: number): RouteRecorder => {
    const key = `${method} ${status} ${route}`;
    let recorder = recorders.get(key);
    if (!recorder) {
      const requests = metrics.httpRequests.labels({ method, route, status: String(status) });
      const duration = metrics.httpDuration.labels({ method, route });
      recorder = { count: () => requests.inc(), time: (seconds) => duration.observe(seconds) };
      recorders.set(key, recorder);
    }
    return recorder;
  };
  return function countRequest(ctx, startedNs) {
    const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
    const route = typeof matched === 'string' ? matched : enginePaths.has(ctx.path) ? ctx.path : 'unmatched';
    const recorder = recorderOf(ctx.method, route, ctx.status);
    recorder.count();
    recorder.time(Number(process.hrtime.bigint() - startedNs) / 1e9);
  };
}
