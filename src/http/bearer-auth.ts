import type { Context, Middleware } from 'koa';
import { InvalidAccessTokenError } from '../tokens/oauth-access-token.js';
import {
  confirmStanding,
  principalHasPermission,
  SessionEndedError,
  verifySignedToken,
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
    const raw = ctx.get('authorization');
    if (!raw) throw unauthenticated(verification.issuer, 'An access token is required.');
    const header = raw.trim();
    // A token remembered as verified had the header's form: only others are checked against it (a
    // pattern over a kilobyte of token, on every request of a polling client).
    const remembered = options.cache?.get(header.slice(7));
    const cached = remembered && /^bearer $/i.test(header.slice(0, 7)) ? remembered : undefined;
    const token = cached ? header.slice(7) : bearerPattern.exec(header)?.[1];
    if (!token)
      throw unauthenticated(
        verification.issuer,
        'The Authorization header must be "Bearer <token>".',
        'invalid_request',
      );
    try {
      if (cached && accept.includes(cached.token)) {
        ctx.state.principal = await confirmStanding(cached, verification);
      } else {
        const verified = await verifySignedToken(token, verification, accept);
        options.cache?.set(token, verified);
        ctx.state.principal = await confirmStanding(verified, verification);
      }
    } catch (error) {
      if (error instanceof SessionEndedError) {
        // What the identity API has always answered for an ended session's token (requireActiveSession).
        throw new ApiError(401, 'session_ended', 'This session has ended. Sign in again.', undefined, {
          'WWW-Authenticate': `Bearer realm="${verification.issuer}", error="invalid_token"`,
        });
      }
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
    const principal = principalOf(ctx);
    if (!principalHasPermission(principal, permission)) throw missingPermission(principal, permission);
    await next();
  };
}

/** The 403 of a principal without the permission, saying what would carry it. */
export function missingPermission(principal: Principal, permission: string): ApiError {
  if (principal.kind === 'service') {
    const scope = `service:${permission}`;
    return new ApiError(403, 'forbidden', `This needs the permission ${scope}.`, { permission: scope });
  }
  if (!principal.hasUserAuthority) {
    return new ApiError(
      403,
      'forbidden',
      `This needs the permission ${permission}, and this access token does not carry your permissions: ` +
        'only a first-party application granted the roles scope (or your sign-in to this service) does.',
      { permission },
    );
  }
  return new ApiError(403, 'forbidden', `This needs the permission ${permission}.`, { permission });
}

export type UserPrincipal = Extract<Principal, { kind: 'user' }>;

/**
 * What main-auth sessions record of their user's authentications (implemented by the identity module:
 * a login, then each re-authentication, is written on the session).
 */
export interface SessionAuthentications {
  /** When the token's session last authenticated its user; throws 401 session_ended when it is over. */
  lastAuthenticatedAt(principal: UserPrincipal): Promise<Date>;
  /** How this user can re-authenticate (the 401's details): the endpoint and the methods they have. */
  howToReauthenticate(principal: UserPrincipal): Promise<Record<string, unknown>>;
}

export interface RecentAuthenticationOptions {
  maxAgeSeconds: number;
  now: () => Date;
  sessions: SessionAuthentications;
}

/**
 * Re-authentication (spec: client registration; ours: contact and sign-in method changes): the user
 * must have authenticated within `maxAgeSeconds`, else 401 reauthentication_required saying how. For a
 * main-auth token the session's record counts (the login, or a later re-authentication: a fresh token
 * alone is not a proof); for an OAuth token its auth_time (re-authorize with prompt=login or max_age).
 * The challenge follows RFC 9470 (step-up authentication): error="insufficient_user_authentication"
 * with max_age. Service tokens have no user to re-authenticate: always refused.
 */
export function requireRecentAuthentication(options: RecentAuthenticationOptions): Middleware {
  const { maxAgeSeconds } = options;
  return async function recentAuthentication(ctx, next) {
    const principal = principalOf(ctx);
    let authenticatedAt: number | undefined;
    if (principal.kind === 'user' && principal.token === 'main-auth') {
      authenticatedAt = (await options.sessions.lastAuthenticatedAt(principal)).getTime() / 1000;
    } else if (principal.kind === 'user') {
      authenticatedAt = principal.authTime;
    }
    if (authenticatedAt === undefined || options.now().getTime() / 1000 - authenticatedAt > maxAgeSeconds) {
      const minutes = Math.round(maxAgeSeconds / 60);
      const how =
        principal.kind === 'user' && principal.token === 'main-auth'
          ? await options.sessions.howToReauthenticate(principal)
          : { prompt: 'login', maxAge: maxAgeSeconds };
      throw new ApiError(
        401,
        'reauthentication_required',
        `Sign in again or re-authenticate to do this: it needs an authentication from the last ${minutes} minutes.`,
        { maxAgeSeconds, ...how },
        {
          'WWW-Authenticate': `Bearer error="insufficient_user_authentication", error_description="A more recent authentication is required", max_age=${maxAgeSeconds}`,
        },
      );
    }
    await next();
  };
}
