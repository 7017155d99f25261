import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import { requireAccessToken } from '../http/bearer-auth.js';
import { DocumentedRouter } from '../http/documented-router.js';
import type { Logger } from '../logger.js';
import type { TokenVerification } from '../tokens/principal.js';

export const adminApiPrefix = '/api/v2/admin';

/** A part of the admin API: adds its documented routes to the router. */
export type AdminRoutes = (api: DocumentedRouter) => void;

/**
 * The admin JSON API under /api/v2/admin (OAuth clients, funnels and allowed methods, users); GET
 * /openapi.json serves its OpenAPI 3.1 document. Every operation is `security: 'bearer'`: a user's
 * access token (the service's own sign-in, or a first-party application's token granted `roles`)
 * whose permissions each route checks; the sensitive ones are declared `reauthentication: true`.
 * Service tokens are not accepted: an administrative change is a person's, audited under their id.
 */
export function createAdminApi(
  deps: {
    config: Config;
    logger: Logger;
    tokenVerification: TokenVerification;
    recentAuthentication: Middleware;
  },
  areas: AdminRoutes[],
): Router {
  const api = new DocumentedRouter(adminApiPrefix, deps.logger, {
    bearer: requireAccessToken(deps.tokenVerification, ['main-auth', 'oauth-user']),
    reauthentication: deps.recentAuthentication,
  });
  let document: Record<string, unknown> | undefined;
  api.router.get('/openapi.json', (ctx) => {
    document ??= api.openApiDocument({ title: 'Admin API', version: '2.0.0', serverUrl: deps.config.issuer });
    ctx.body = document;
  });
  for (const addRoutes of areas) addRoutes(api);
  return api.router;
}
