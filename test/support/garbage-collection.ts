import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type Koa from 'koa';
import { expect, vi } from 'vitest';

/** V8's collector, made callable here (vitest does not start workers with --expose-gc). */
export function collector(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * Waits until every target has been collected; fails after `withinMs`. Collects between turns of the
 * event loop: a WeakRef's target survives the job that made (or last read) it.
 */
export async function expectCollected(targets: WeakRef<object>[], withinMs: number): Promise<void> {
  const gc = collector();
  await vi.waitFor(
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
      expect(targets.filter((target) => target.deref() !== undefined)).toHaveLength(0);
    },
    { timeout: withinMs, interval: 50 },
  );
}

/**
 * Serves `app` on a port of its own, noting each request's Koa context (weakly) from its first
 * middleware, until `stop()`: which closes every connection, so no socket of the test keeps one.
 */
export async function serveWatchingRequests(app: Koa) {
  const requests: WeakRef<object>[] = [];
  const watch: Koa.Middleware = async (ctx, next) => {
    requests.push(new WeakRef(ctx));
    await next();
  };
  app.middleware.unshift(watch);
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async stop() {
      app.middleware.splice(app.middleware.indexOf(watch), 1);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
