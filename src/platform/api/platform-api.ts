import type Router from '@koa/router';
import type { Config } from '../../config.js';
import { DocumentedRouter } from '../../http/documented-router.js';
import type { Logger } from '../../logger.js';

export const platformApiPrefix = '/api/v2/platform';

/** A part of the platform API: adds its documented routes to the router. */
export type PlatformRoutes = (api: DocumentedRouter) => void;

/**
 * The platform JSON API under /api/v2/platform (reference data, usage registry, feature flags,
 * translation packages, event schemas); GET /openapi.json serves its OpenAPI 3.1 document.
 */
export function createPlatformApi(deps: { config: Config; logger: Logger }, areas: PlatformRoutes[]): Router {
  const api = new DocumentedRouter(platformApiPrefix, deps.logger);
  let document: Record<string, unknown> | undefined;
  api.router.get('/openapi.json', (ctx) => {
    document ??= api.openApiDocument({
      title: 'Platform API',
      version: '2.0.0',
      serverUrl: deps.config.issuer,
    });
    ctx.body = document;
  });
  for (const addRoutes of areas) addRoutes(api);
  return api.router;
}
