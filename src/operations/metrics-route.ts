import Router from '@koa/router';
import type { Context } from 'koa';
import { constantTimeEqual } from '../crypto/digest.js';
import { isFromThisMachine } from '../http/loopback-request.js';
import type { ServiceMetrics } from './service-metrics.js';

/**
 * GET /metrics (Prometheus text). Who may read it: with a metrics token configured (METRICS_TOKEN),
 * whoever presents it as a bearer token, from anywhere; without one, only a scraper on this machine
 * (a loopback peer that no proxy relayed). The figures say how busy the service is and how many
 * sign-ins fail, which is nobody else's business.
 */
export function metricsRoute(metrics: ServiceMetrics, token: string | undefined): Router {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    if (!mayReadMetrics(ctx, token)) return;
    const { contentType, body } = await metrics.text();
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}

function mayReadMetrics(ctx: Context, token: string | undefined): boolean {
  if (token === undefined) {
    if (isFromThisMachine(ctx)) return true;
    ctx.status = 403;
    ctx.body = {
      error: 'forbidden',
      message: 'Metrics are served to this machine only; set METRICS_TOKEN to scrape from elsewhere.',
    };
    return false;
  }
  const presented = /^Bearer (\S+)$/i.exec(ctx.get('authorization'))?.[1];
  if (presented !== undefined && constantTimeEqual(presented, token)) return true;
  ctx.status = 401;
  ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
  ctx.body = { error: 'unauthorized', message: 'The metrics token is missing or wrong.' };
  return false;
}
