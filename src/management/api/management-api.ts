import type Router from '@koa/router';
import type { Config } from '../../config.js';
import { DocumentedRouter } from '../../http/documented-router.js';
import type { Logger } from '../../logger.js';

export const managementApiPrefix = '/api/v2/management';

/** A part of the management API: adds its documented routes to the router. */
export type ManagementRoutes = (api: DocumentedRouter) => void;

/** The management JSON API under /api/v2/management; GET /openapi.json serves its OpenAPI 3.1 document. */
export function createManagementApi(
  deps: { config: Config; logger: Logger },
  areas: ManagementRoutes[],
): Router {
  const api = new DocumentedRouter(managementApiPrefix, deps.logger);
  let document: Record<string, unknown> | undefined;
  api.router.get('/openapi.json', (ctx) => {
    document ??= api.openApiDocument({
      title: 'Management API',
      version: '2.0.0',
      serverUrl: deps.config.issuer,
    });
    ctx.body = document;
  });
  for (const addRoutes of areas) addRoutes(api);
  return api.router;
}
