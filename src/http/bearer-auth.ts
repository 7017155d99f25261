import type { Context, Middleware } from 'koa';
import { InvalidAccessTokenError } from '../tokens/oauth-access-token.js';
import {
  principalHasPermission,
  verifyAccessToken,
  type Principal,
  type TokenKind,
  type TokenVerification,
} from '../tokens/principal.js';
import { ApiError } from './api-error.js';

export interface AuthenticatedState {
  principal: Principal;
}

const bearerPattern = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i;

function unauthenticated(realm: string, message: string, error?: string): ApiError {
  const challenge = error ? `Bearer realm="${realm}", error="${error}"` : `Bearer realm="${realm}"`;
  return new ApiError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': challenge });
}

/** Where verified tokens may be remembered until they expire (e.g. the platform's VerifiedTokenCache). */
export interface PrincipalCache {
  get(token: string): Principal | undefined;
  set(token: string, principal: Principal): void;
}

/**
 * Requires `Authorization: Bearer <access token>` of one of the accepted kinds; puts the principal in
 * `ctx.state.principal`. Missing or invalid: 401 with the JSON error body and a Bearer challenge.
 */
export function requireAccessToken(
  verification: TokenVerification,
  accept: readonly TokenKind[],
  options: { cache?: PrincipalCache } = {},
): Middleware {
  return async function bearerAuthentication(ctx, next) {
    const header = ctx.get('authorization');
    if (!header) throw unauthenticated(verification.issuer, 'An access token is required.');
    const token = bearerPattern.exec(header.trim())?.[1];
    if (!token)
      throw unauthenticated(
        verification.issuer,
        'The Authorization header must be "Bearer <token>".',
        'invalid_request',
      );
    const cached = options.cache?.get(token);
    if (cached && accept.includes(cached.token)) {
      ctx.state.principal = cached;
      return next();
    }
    try {
      ctx.state.principal = await verifyAccessToken(token, verification, accept);
      options.cache?.set(token, ctx.state.principal);
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) {
        throw unauthenticated(
          verification.issuer,
          'The access token is invalid or expired.',
          'invalid_token',
        );
      }
      throw error;
    }
    await next();
  };
}

export function principalOf(ctx: Context): Principal {
  const principal = (ctx.state as Partial<AuthenticatedState>).principal;
  if (!principal) throw new Error('principalOf used on a route without requireAccessToken');
  return principal;
}

/** 403 unless the principal has the permission (users) or the service scope for it (services). */
export function requirePermission(permission: string): Middleware {
  return async function permissionCheck(ctx, next) {
    if (!principalHasPermission(principalOf(ctx), permission)) {
      throw new ApiError(403, 'forbidden', `This needs the permission ${permission}.`, { permission });
    }
    await next();
  };
}

/**
 * Re-authentication (spec: client registration): the user must have authenticated within `maxAgeSeconds`,
 * else 401 reauthentication_required asking them to sign in again.
 */
export function requireRecentAuthentication(maxAgeSeconds: number, now: () => Date): Middleware {
  return async function recentAuthentication(ctx, next) {
    const principal = principalOf(ctx);
    const authTime = principal.kind === 'user' ? principal.authTime : undefined;
    if (authTime === undefined || Math.floor(now().getTime() / 1000) - authTime > maxAgeSeconds) {
      throw new ApiError(
        401,
        'reauthentication_required',
        `Sign in again to do this: it needs an authentication from the last ${Math.round(maxAgeSeconds / 60)} minutes.`,
        { maxAgeSeconds },
      );
    }
    await next();
  };
}
