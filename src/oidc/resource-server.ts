import { errors, type Client, type KoaContextWithOIDC, type ResourceServer } from 'oidc-provider';
import { allowedScopesOf } from './client-metadata.js';
import { isOidcScope, isServiceScope, splitScope } from './scopes.js';
import { defaults } from '../defaults.js';

export const userAccessTokenTtlSeconds = defaults.lifetimes.userAccessToken;
export const serviceAccessTokenTtlSeconds = defaults.lifetimes.serviceAccessToken;

/**
 * Every access token is an RS256 JWT for the one ecosystem audience (RFC 8707 resource = API_AUDIENCE);
 * the engine issues JWTs only through a resource server, hence this function.
 *
 * - user flows: the client's allowed OIDC scopes, 15 minutes;
 * - client credentials: the client's allowed `service:*` scopes, 5 minutes. A requested scope outside
 *   that list is refused with invalid_scope (never silently dropped); no scope asked = all allowed ones.
 */
export function resourceServerInfo(apiAudience: string) {
  return async function getResourceServerInfo(
    ctx: KoaContextWithOIDC,
    resourceIndicator: string,
    client: Client,
  ): Promise<ResourceServer> {
    if (resourceIndicator !== apiAudience) {
      throw new errors.InvalidTarget('unknown resource indicator');
    }
    const allowed = allowedScopesOf(client);
    const jwt = { sign: { alg: 'RS256' as const } };
    if (ctx.oidc.route === 'token' && ctx.oidc.params?.grant_type === 'client_credentials') {
      const serviceScopes = allowed.filter(isServiceScope);
      const requested = splitScope(ctx.oidc.params.scope as string | undefined);
      const refused = requested.filter((scope) => !serviceScopes.includes(scope));
      if (refused.length > 0) {
        throw new errors.InvalidScope('requested scope is not allowed for this client', refused.join(' '));
      }
      if (requested.length === 0) ctx.oidc.params.scope = serviceScopes.join(' ');
      return {
        scope: serviceScopes.join(' '),
        audience: apiAudience,
        accessTokenTTL: serviceAccessTokenTtlSeconds,
        accessTokenFormat: 'jwt',
        jwt,
      };
    }
    return {
      scope: allowed.filter(isOidcScope).join(' '),
      audience: apiAudience,
      accessTokenTTL: userAccessTokenTtlSeconds,
      accessTokenFormat: 'jwt',
      jwt,
    };
  };
}
