import { decodeProtectedHeader } from 'jose';
import type { Middleware } from 'koa';
import type { Client, Provider } from 'oidc-provider';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import { readFormBody } from '../../http/form-body.js';
import type { PublishedKeySet } from '../../keys/published-key-set.js';
import {
  InvalidAccessTokenError,
  tokenScopes,
  verifyOAuthAccessToken,
  type OAuthAccessTokenClaims,
} from '../../tokens/oauth-access-token.js';
import {
  mainAuthTokenType,
  verifyMainAuthAccessToken,
  type MainAuthAccessTokenClaims,
} from '../../tokens/main-auth-access-token.js';
import {
  scopesStillAllowed,
  type MainAuthSessionStanding,
  type OAuthTokenStanding,
} from '../../tokens/principal.js';
import { VerifiedTokenCache } from '../../tokens/verified-token-cache.js';
import type { ActiveUserCache } from '../active-user-cache.js';
import { authenticateClientWithBasic } from '../client-authentication.js';
import { allowedScopesOf } from '../client-metadata.js';
import { findActiveRefreshToken } from '../models/oauth-refresh-token.js';
import { OAuthError } from '../oauth-error.js';

const introspectionRequest = z.object({
  token: z.string().min(1).max(4096),
  token_type_hint: z.string().max(50).optional(),
});

type Introspection =
  | { active: false }
  | {
      active: true;
      sub: string;
      /** A main-auth token has no client and no scopes (its authority is its roles and permissions). */
      client_id?: string;
      scope?: string;
      exp: number;
      iat: number;
      iss: string;
      /** RFC 7662 §2.2: the type of an access token (RFC 6749 §7.1); a refresh token has none. */
      token_type?: 'Bearer';
    };

const inactive: Introspection = { active: false };

/** As the engine's own endpoints (lib/shared/selective_body.js). */
const bodyLimit = 56 * 1024;

/**
 * POST /oauth/introspect (RFC 7662), the client authenticated with HTTP Basic. Active JWT access
 * tokens and refresh tokens get the spec's fields; anything invalid, expired, revoked, from another
 * issuer or not visible to the caller gets `{"active":false}` only.
 *
 * Who sees what: a client sees its own tokens; a service client (client_credentials, i.e. a resource
 * server) also sees other clients' access tokens, and main-auth tokens (the service's own sign-in, which
 * the ecosystem's services accept too): active while their session is live, so a service can learn that
 * a copied token's owner signed out before its exp. Refresh tokens are only ever visible to their client.
 *
 * An access token is inactive once its grant is revoked, its client disabled or its user disabled: all
 * three are answered from per-node memory refreshed every few seconds, so a verified token costs no
 * database round trip.
 *
 * A resource server calls it for every request it serves, so it is answered by its path alone, right
 * after the client's rate limit (no router, no general body parser; service.ts), and its errors by the
 * request envelope in the OAuth shape (oidc/oauth-error.ts). Any method but POST is 405.
 */
export function introspectionEndpoint(deps: {
  config: Config;
  db: Database;
  clock: Clock;
  provider: Provider;
  keySet: PublishedKeySet;
  oauthTokens: OAuthTokenStanding;
  mainAuthSessions: MainAuthSessionStanding;
  activeUsers: ActiveUserCache;
}): Middleware {
  const { config, db, clock, provider, keySet, oauthTokens, mainAuthSessions, activeUsers } = deps;
  // A resource server introspects the bearer token of every call it serves: one verification per token.
  const verifiedTokens = new VerifiedTokenCache<OAuthAccessTokenClaims>(clock);

  const verifiedClaims = async (token: string): Promise<OAuthAccessTokenClaims | undefined> => {
    const remembered = verifiedTokens.get(token);
    if (remembered) return remembered;
    try {
      const claims = await verifyOAuthAccessToken(token, keySet, {
        issuer: config.issuer,
        audience: config.apiAudience,
        clock,
      });
      verifiedTokens.set(token, claims);
      return claims;
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) return undefined;
      throw error;
    }
  };

  const introspectAccessToken = async (token: string, caller: Client): Promise<Introspection> => {
    const claims = await verifiedClaims(token);
    if (!claims) return inactive;
    const isResourceServer = caller.grantTypeAllowed('client_credentials');
    if (claims.client_id !== caller.clientId && !isResourceServer) return inactive;
    // A token dies with its grant (revoked) and its client (disabled); a user's token with the user's account.
    const standing = await oauthTokens.check({
      clientId: claims.client_id,
      grantId: claims.grant_id,
      userId: claims.serviceClient ? undefined : claims.sub,
      issuedAt: claims.iat,
    });
    if (!standing) return inactive;
    return {
      active: true,
      sub: claims.sub,
      client_id: claims.client_id,
      // A scope taken from the client since the token was issued is no longer the token's.
      scope: [...scopesStillAllowed(tokenScopes(claims), standing.allowedScopes)].join(' '),
      exp: claims.exp!,
      iat: claims.iat!,
      iss: claims.iss!,
      token_type: 'Bearer',
    };
  };

  const verifiedMainAuthTokens = new VerifiedTokenCache<MainAuthAccessTokenClaims>(clock);

  const introspectMainAuthToken = async (token: string, caller: Client): Promise<Introspection> => {
    // Issued to no client: only a resource server sees it, as it sees other clients' tokens.
    if (!caller.grantTypeAllowed('client_credentials')) return inactive;
    let claims = verifiedMainAuthTokens.get(token);
    if (!claims) {
      try {
        claims = await verifyMainAuthAccessToken(token, keySet, {
          issuer: config.issuer,
          audience: config.apiAudience,
          clock,
        });
      } catch (error) {
        if (error instanceof InvalidAccessTokenError) return inactive;
        throw error;
      }
      verifiedMainAuthTokens.set(token, claims);
    }
    // Logged out, revoked, expired, idle, or its user disabled: as every API of the service refuses it.
    if (!(await mainAuthSessions.isLive({ sessionId: claims.sessionId, userId: claims.sub }))) {
      return inactive;
    }
    return {
      active: true,
      sub: claims.sub,
      exp: claims.exp!,
      iat: claims.iat!,
      iss: claims.iss!,
      token_type: 'Bearer',
    };
  };

  /** A JWT of ours is an OAuth access token (at+jwt) or a main-auth token (JWT), by its signed header. */
  const introspectJwt = (token: string, caller: Client): Promise<Introspection> =>
    verifiedTokens.get(token) === undefined && isMainAuthToken(token)
      ? introspectMainAuthToken(token, caller)
      : introspectAccessToken(token, caller);

  const introspectRefreshToken = async (token: string, caller: Client): Promise<Introspection> => {
    const refreshToken = await findActiveRefreshToken(db, token, clock.now());
    if (!refreshToken || refreshToken.clientId !== caller.clientId) return inactive;
    if (!(await activeUsers.isActive(refreshToken.userId))) return inactive;
    const epoch = (date: Date) => Math.floor(date.getTime() / 1000);
    return {
      active: true,
      sub: refreshToken.userId,
      client_id: refreshToken.clientId,
      // The caller is the token's client, read through the client cache: its scopes as they are now.
      scope: [...scopesStillAllowed(new Set(refreshToken.scopes), allowedScopesOf(caller as never))].join(
        ' ',
      ),
      exp: epoch(refreshToken.expiresAt),
      iat: epoch(refreshToken.issuedAt),
      iss: config.issuer,
    };
  };

  return async function introspect(ctx) {
    if (ctx.method !== 'POST') {
      throw new OAuthError(405, 'invalid_request', 'token introspection takes a POST request', {
        Allow: 'POST',
      });
    }
    const caller = await authenticateClientWithBasic(ctx, provider);
    const parsed = introspectionRequest.safeParse(await readFormBody(ctx, bodyLimit));
    if (!parsed.success) throw new OAuthError(400, 'invalid_request', 'the token parameter is required');
    const { token } = parsed.data;
    const looksLikeJwt = token.split('.').length === 3;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = looksLikeJwt
      ? await introspectJwt(token, caller)
      : await introspectRefreshToken(token, caller);
  };
}

function isMainAuthToken(token: string): boolean {
  try {
    return decodeProtectedHeader(token).typ === mainAuthTokenType;
  } catch {
    return false;
  }
}
