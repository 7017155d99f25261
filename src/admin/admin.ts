import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { StepRegistry } from '../identity/auth-flow/step-registry.js';
import type { AuthMethodRegistry } from '../identity/auth-methods/auth-method-plugin.js';
import type { Logger } from '../logger.js';
import type { TokenVerification } from '../tokens/principal.js';
import { createAdminApi } from './admin-api.js';
import { authFlowRoutes } from './auth-flow-routes.js';
import { oauthClientRoutes } from './oauth-client-routes.js';
import { oauthClientsPageRoutes } from './oauth-clients-page.js';
import { profileFieldRoutes } from './profile-field-routes.js';
import { userRoutes } from './user-routes.js';

export interface AdminDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  tokenVerification: TokenVerification;
  /** requireRecentAuthentication: the guard of the sensitive changes. */
  recentAuthentication: Middleware;
  /** The registered auth-flow steps and sign-in methods: what funnels and allowed methods may name. */
  steps: StepRegistry;
  authMethods: AuthMethodRegistry;
}

export interface Admin {
  /** /api/v2/admin */
  router: Router;
  /** /:lang/admin/oauth-clients */
  pages: Router;
}

/** The administrators' module (docs/admin.md): the admin API (OAuth clients, funnels and allowed
 * methods, users, registration profile fields) and the admin page of OAuth clients. */
export function createAdmin(deps: AdminDeps): Admin {
  const { db, clock } = deps;
  return {
    router: createAdminApi(deps, [
      oauthClientRoutes({ db, clock }),
      authFlowRoutes({ db, clock, steps: deps.steps, authMethods: deps.authMethods }),
      userRoutes({ db, clock }),
      profileFieldRoutes({ db, clock }),
    ]),
    pages: oauthClientsPageRoutes(),
  };
}
