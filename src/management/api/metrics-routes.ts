import type { Middleware } from 'koa';
import type { DocumentedRouter } from '../../http/documented-router.js';
import type { ManagementMetrics } from '../management-metrics.js';
import { metricsPermission } from './management-access.js';

/** GET /metrics: the management metrics in Prometheus text format. */
export function metricsRoutes(deps: {
  metrics: ManagementMetrics;
  access: (permission: string) => Middleware[];
}) {
  return (api: DocumentedRouter): void => {
    api.add(
      {
        method: 'get',
        path: '/metrics',
        summary: 'crm messages by outcome, batch times, snapshot failures, dead letters waiting (Prometheus)',
        tags: ['Metrics'],
        security: 'bearer',
        responses: {
          200: { description: 'Prometheus text exposition format' },
          401: { description: 'No valid access token' },
          403: { description: `Neither a user nor a service with ${metricsPermission}` },
        },
      },
      ...deps.access(metricsPermission),
      async (ctx) => {
        const { contentType, body } = await deps.metrics.text();
        ctx.set('Cache-Control', 'no-store');
        ctx.type = contentType;
        ctx.body = body;
      },
    );
  };
}
