import type Router from '@koa/router';
import type { Config } from '../../config.js';
import { DocumentedRouter, type DeclaredGuards } from '../../http/documented-router.js';
import type { Logger } from '../../logger.js';
import { defaults } from '../../defaults.js';

export const identityApiPrefix = defaults.paths.identityApi;

/** A part of the identity API: adds its documented routes to the router. */
export type IdentityRoutes = (api: DocumentedRouter) => void;

/**
 * The identity JSON API under /api/v2/identity: each area (auth flow, sessions, passwords, ...) adds
 * its routes; GET /openapi.json serves the OpenAPI 3.1 document generated from the same zod schemas.
 * Every operation declared `security: 'bearer'` gets `guards.bearer` (requireSignedIn: a main-auth token
 * of a live session) and every one declared `reauthentication: true` gets `guards.reauthentication`.
 */
export function createIdentityApi(
  deps: { config: Config; logger: Logger; guards: Required<DeclaredGuards> },
  areas: IdentityRoutes[],
): Router {
  const api = new DocumentedRouter(identityApiPrefix, deps.logger, deps.guards);
  for (const addRoutes of areas) addRoutes(api);
  let document: Record<string, unknown> | undefined;
  api.router.get('/openapi.json', (ctx) => {
    document ??= api.openApiDocument({
      title: 'Identity API',
      version: '2.0.0',
      serverUrl: deps.config.issuer,
    });
    ctx.body = document;
  });
  return api.router;
}
