import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { adminAuditEventTypes, auditAdminChange } from '../../admin/admin-audit.js';
import { ApiError } from '../../http/api-error.js';
import { describeZodIssues } from '../../http/error-handler.js';
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
  type OAuthClient,
} from '../models/oauth-client.js';

/** The request's field names (RFC 7591) of the client schema's fields. */
const fieldNames: Record<string, string> = {
  redirectUris: 'redirect_uris',
  postLogoutRedirectUris: 'post_logout_redirect_uris',
  grantTypes: 'grant_types',
};

const authMethods = ['none', 'client_secret_basic', 'client_secret_post'] as const;

/**
 * Our field names, or RFC 7591's client metadata, as a relying-party library's dynamic registration
 * sends it: `client_name` for `name`, `scope` (space-separated) for `scopes`, and
 * `token_endpoint_auth_method` for `type` (`none`: public; a secret method: confidential; left out,
 * RFC 7591 §2's default `client_secret_basic`). RFC 7591 metadata we have no use for is ignored (§2:
 * the server may ignore it); `response_types` other than `code` are refused.
 */
const registrationRequest = z
  .object({
    name: z.string().optional(),
    client_name: z.string().optional(),
    type: z.enum(clientTypes).optional(),
    token_endpoint_auth_method: z.enum(authMethods).optional(),
    redirect_uris: z.array(z.string()).optional(),
    post_logout_redirect_uris: z.array(z.string()).optional(),
    scopes: z.array(z.string()).optional(),
    scope: z.string().optional(),
    grant_types: z.array(z.enum(grantTypes)).optional(),
    response_types: z.array(z.literal('code')).optional(),
  })
  .transform((body, context) => {
    const typeOfAuthMethod =
      body.token_endpoint_auth_method === undefined
        ? undefined
        : body.token_endpoint_auth_method === 'none'
          ? 'public'
          : 'confidential';
    if (body.type && typeOfAuthMethod && body.type !== typeOfAuthMethod) {
      context.addIssue({
        code: 'custom',
        path: ['token_endpoint_auth_method'],
        message: `a ${body.type} client does not authenticate with ${body.token_endpoint_auth_method}`,
      });
    }
    // RFC 7591 §2: every field is optional. A user-flow client named by nothing is named by the host
    // of its first redirect URI (what the consent page shows), and gets the default scope, openid.
    const isServiceClient = body.grant_types?.includes('client_credentials') ?? false;
    return {
      name: body.name ?? body.client_name ?? hostOf(body.redirect_uris?.[0]),
      type: body.type ?? typeOfAuthMethod ?? 'confidential',
      redirectUris: body.redirect_uris,
      postLogoutRedirectUris: body.post_logout_redirect_uris,
      scopes:
        body.scopes ?? body.scope?.split(' ').filter(Boolean) ?? (isServiceClient ? undefined : ['openid']),
      grantTypes: body.grant_types,
    };
  });

function hostOf(uri: string | undefined): string | undefined {
  return URL.canParse(uri ?? '') ? new URL(uri!).host || undefined : undefined;
}

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
    withClientMetadataErrors,
    async (ctx) => {
      const principal = principalOf(ctx);
      const request = registrationRequest.safeParse(ctx.request.body ?? {});
      if (!request.success) {
        throw new ClientMetadataError(
          'invalid_client_metadata',
          'The client registration is not valid.',
          describeZodIssues(request.error),
        );
      }
      const parsed = newClientSchema.safeParse({
        ...request.data,
        ownerId: principal.kind === 'user' ? principal.userId : null,
      });
      if (!parsed.success) {
        const details = parsed.error.issues.map((issue) => ({
          path: [fieldNames[String(issue.path[0])] ?? issue.path[0], ...issue.path.slice(1)].join('.'),
          message: issue.message,
        }));
        // RFC 7591 §3.2.2: a URI value that is not acceptable is invalid_redirect_uri.
        throw details.some((detail) => /^(post_logout_)?redirect_uris\.\d+$/.test(detail.path))
          ? new ClientMetadataError('invalid_redirect_uri', 'A redirect URI is not acceptable.', details)
          : new ClientMetadataError(
              'invalid_client_metadata',
              'The client registration is not valid.',
              details,
            );
      }
      // Managing clients is not every permission: a service scope only from someone who holds it.
      requireMayGrantScopes(principal, parsed.data.scopes);
      // Audited as the admin API's creation is: the same change, by another door.
      const { client, clientSecret } = await deps.db.transaction(async (trx) => {
        const created = await createClient(trx, parsed.data);
        await auditAdminChange(
          trx,
          ctx,
          adminAuditEventTypes.clientCreated,
          { clientId: created.client.clientId, name: created.client.name, endpoint: 'registration' },
          deps.clock.now(),
        );
        return created;
      });
      ctx.status = 201;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = {
        ...clientView(client),
        ...registeredMetadata(client),
        ...(clientSecret ? { client_secret: clientSecret, client_secret_expires_at: 0 } : {}),
      };
    },
  );
  return router;
}

/**
 * A refused registration: our one error body, which also carries RFC 7591 §3.2.2's
 * `error_description` (the message and the first offending field), so a relying-party library that
 * reads only RFC 7591 shows why.
 */
class ClientMetadataError extends ApiError {
  constructor(code: string, message: string, details?: unknown) {
    super(400, code, message, details);
  }

  override toBody() {
    const [first] = Array.isArray(this.details)
      ? (this.details as { path?: string; message?: string }[])
      : [];
    const why = first?.message ? ` ${first.path ? `${first.path}: ` : ''}${first.message}` : '';
    return { ...super.toBody(), error_description: `${this.message}${why}` };
  }
}

/** Refusals of the client model (a catalogue scope it doesn't know, say) in RFC 7591's shape too. */
const withClientMetadataErrors: Middleware = async (_ctx, next) => {
  try {
    await next();
  } catch (caught) {
    if (
      caught instanceof ApiError &&
      !(caught instanceof ClientMetadataError) &&
      (caught.code === 'invalid_client_metadata' || caught.code === 'invalid_redirect_uri')
    ) {
      throw new ClientMetadataError(caught.code, caught.message, caught.details);
    }
    throw caught;
  }
};

/** RFC 7591 §3.2.1: the client's metadata as registered, beside our own view of it. */
function registeredMetadata(client: OAuthClient) {
  return {
    client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
    client_name: client.name,
    scope: client.allowedScopes.join(' '),
    token_endpoint_auth_method: client.type === 'public' ? 'none' : 'client_secret_basic',
    response_types: client.grantTypes.includes('authorization_code') ? ['code'] : [],
  };
}
