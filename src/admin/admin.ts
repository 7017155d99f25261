import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { TokenVerification } from '../tokens/principal.js';
import { createAdminApi } from './admin-api.js';
import { oauthClientRoutes } from './oauth-client-routes.js';

export interface AdminDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  tokenVerification: TokenVerification;
  /** requireRecentAuthentication: the guard of the sensitive changes. */
  recentAuthentication: Middleware;
}

export interface Admin {
  /** /api/v2/admin */
  router: Router;
}

/** The administrators' module (docs/admin.md): the admin API. */
export function createAdmin(deps: AdminDeps): Admin {
  const { db, clock } = deps;
  return {
    router: createAdminApi(deps, [oauthClientRoutes({ db, clock })]),
  };
}
