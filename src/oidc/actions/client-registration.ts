import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { principalOf, requireAccessToken, requirePermission } from '../../http/bearer-auth.js';
import { jsonApiRouter } from '../../http/json-api.js';
import type { Logger } from '../../logger.js';
import type { TokenVerification } from '../../tokens/principal.js';
import { requireMayGrantScopes } from '../client-authority.js';
import {
  clientTypes,
  clientView,
  createClient,
  grantTypes,
  newClientSchema,
} from '../models/oauth-client.js';

/** The request's field names (RFC 7591) of the client schema's fields. */
const fieldNames: Record<string, string> = {
  redirectUris: 'redirect_uris',
  postLogoutRedirectUris: 'post_logout_redirect_uris',
  grantTypes: 'grant_types',
};

const registrationRequest = z.object({
  name: z.string(),
  type: z.enum(clientTypes),
  redirect_uris: z.array(z.string()).optional(),
  post_logout_redirect_uris: z.array(z.string()).optional(),
  scopes: z.array(z.string()),
  grant_types: z.array(z.enum(grantTypes)).optional(),
});

/**
 * POST /oauth/clients/register: an administrator registers a client. Needs an ecosystem user access
 * token with identity.oauth_clients.manage and an authentication of the last 5 minutes; a
 * service:<permission> scope also needs that permission (src/oidc/client-authority.ts). The spec's
 * client rules are enforced by the client model (public: no secret, PKCE; confidential: secret shown
 * once, here; service clients: client_credentials only, no redirects, service:<catalogue> scopes).
 * Not RFC 7591 open registration: there is no unauthenticated registration.
 */
export function clientRegistrationRoutes(deps: {
  db: Database;
  clock: Clock;
  tokenVerification: TokenVerification;
  recentAuthentication: Middleware;
  logger: Logger;
}): Router {
  const router = jsonApiRouter('/oauth/clients', deps.logger);
  router.post(
    '/register',
    requireAccessToken(deps.tokenVerification, ['main-auth', 'oauth-user']),
    requirePermission('identity.oauth_clients.manage'),
    deps.recentAuthentication,
    async (ctx) => {
      const principal = principalOf(ctx);
      const body = registrationRequest.parse(ctx.request.body ?? {});
      const parsed = newClientSchema.safeParse({
        name: body.name,
        type: body.type,
        redirectUris: body.redirect_uris,
        postLogoutRedirectUris: body.post_logout_redirect_uris,
        scopes: body.scopes,
        grantTypes: body.grant_types,
        ownerId: principal.kind === 'user' ? principal.userId : null,
      });
      if (!parsed.success) {
        const details = parsed.error.issues.map((issue) => ({
          path: [fieldNames[String(issue.path[0])] ?? issue.path[0], ...issue.path.slice(1)].join('.'),
          message: issue.message,
        }));
        // RFC 7591 §3.2.2: a URI value that is not acceptable is invalid_redirect_uri.
        throw details.some((detail) => /^(post_logout_)?redirect_uris\.\d+$/.test(detail.path))
          ? new ApiError(400, 'invalid_redirect_uri', 'A redirect URI is not acceptable.', details)
          : new ApiError(400, 'invalid_client_metadata', 'The client registration is not valid.', details);
      }
      // Managing clients is not every permission: a service scope only from someone who holds it.
      requireMayGrantScopes(principal, parsed.data.scopes);
      const { client, clientSecret } = await createClient(deps.db, parsed.data);
      ctx.status = 201;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = {
        ...clientView(client),
        ...(clientSecret ? { client_secret: clientSecret } : {}),
      };
    },
  );
  return router;
}
