import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Context } from 'koa';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import type { PublishedKeySet } from '../../keys/published-key-set.js';
import type { Logger } from '../../logger.js';
import {
  InvalidAccessTokenError,
  tokenScopes,
  verifyOAuthAccessToken,
} from '../../tokens/oauth-access-token.js';
import { scopesStillAllowed, type OAuthTokenStanding } from '../../tokens/principal.js';
import { claimsForScopes, loadAccount } from '../account-claims.js';
import { bearerChallenge, OAuthError, oauthErrors } from '../oauth-error.js';
import { oauthRoutes } from '../provider.js';

/**
 * GET|POST /oauth/userinfo (OIDC Core §5.3): the claims of the token's granted scopes only. Accepts the
 * JWT access tokens this provider issues while their grant and client stand; refuses main-auth tokens
 * (other signing key).
 */
export function userinfoRoutes(deps: {
  config: Config;
  db: Database;
  clock: Clock;
  keySet: PublishedKeySet;
  oauthTokens: OAuthTokenStanding;
  logger: Logger;
}) {
  const { config, db, clock, keySet, oauthTokens } = deps;
  const realm = config.issuer;
  const router = new Router();

  const userinfo = async (ctx: Context) => {
    const token = bearerToken(ctx, realm);
    if (!token) {
      throw new OAuthError(401, 'invalid_request', 'no access token provided', bearerChallenge(realm));
    }
    const invalid = (description: string) =>
      new OAuthError(401, 'invalid_token', description, bearerChallenge(realm, 'invalid_token', description));
    let claims;
    try {
      claims = await verifyOAuthAccessToken(token, keySet, {
        issuer: config.issuer,
        audience: config.apiAudience,
        clock,
      });
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) throw invalid('invalid access token');
      throw error;
    }
    const scopes = tokenScopes(claims);
    if (claims.serviceClient || !scopes.has('openid')) {
      throw new OAuthError(
        403,
        'insufficient_scope',
        'access token is missing the openid scope',
        bearerChallenge(realm, 'insufficient_scope', 'access token is missing the openid scope'),
      );
    }
    const standing = await oauthTokens.check({
      clientId: claims.client_id,
      grantId: claims.grant_id,
      userId: claims.sub,
      issuedAt: claims.iat,
    });
    if (!standing) throw invalid('the access token was revoked, or its client or user disabled');
    const account = await loadAccount(db, claims.sub);
    if (!account) throw invalid('the user of this token no longer exists or is disabled');
    ctx.set('Cache-Control', 'no-store');
    // Only the claims of scopes the client is still allowed (an allowance taken away counts at once).
    ctx.body = await claimsForScopes(db, account, scopesStillAllowed(scopes, standing.allowedScopes));
  };

  const cors = async (ctx: Context, next: () => Promise<unknown>) => {
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Access-Control-Expose-Headers', 'WWW-Authenticate');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Access-Control-Allow-Methods', 'GET, POST');
      ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
      ctx.status = 204;
      return;
    }
    await next();
  };

  router.options(oauthRoutes.userinfo, cors);
  router.get(oauthRoutes.userinfo, cors, oauthErrors(deps.logger), userinfo);
  router.post(
    oauthRoutes.userinfo,
    cors,
    oauthErrors(deps.logger),
    bodyParser({ enableTypes: ['form'], formLimit: '16kb' }),
    userinfo,
  );
  return router;
}

/**
 * RFC 6750: the token from the Authorization header, or (POST) the access_token form field. A token
 * sent both ways, or the field given twice, is a malformed request: 400 invalid_request (§2: clients
 * MUST NOT use more than one method; §3.1).
 */
function bearerToken(ctx: Context, realm: string): string | undefined {
  const header = ctx.get('authorization');
  const fromBody = (ctx.request as { body?: Record<string, unknown> }).body?.access_token;
  const malformed = (description: string) =>
    new OAuthError(
      400,
      'invalid_request',
      description,
      bearerChallenge(realm, 'invalid_request', description),
    );
  if (header && fromBody !== undefined) {
    throw malformed('the access token must be sent one way only, not in both the header and the body');
  }
  if (Array.isArray(fromBody)) throw malformed('access_token must not be repeated');
  if (header) {
    const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
    return match?.[1];
  }
  return typeof fromBody === 'string' && fromBody ? fromBody : undefined;
}
