import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import type { RateLimits } from '../../http/rate-limit.js';
import { requestInfo } from '../../http/request-info.js';
import { readEngineSessionId } from '../../oidc/engine-session-cookie.js';
import { loadUserAccess } from '../access/user-access.js';
import { loadUserMethodStates } from '../auth-methods/user-method-states.js';
import type { MainAuthSigning } from '../sessions/main-auth-tokens.js';
import { activeSessionOf } from '../sessions/require-active-session.js';
import type { SessionPolicy } from '../sessions/session-policy.js';
import { clearRefreshCookie, readRefreshCookie, setRefreshCookie } from '../sessions/refresh-cookie.js';
import { refreshSession } from '../sessions/refresh-session.js';
import { logOut } from '../sessions/session-revocation.js';
import { findUserById } from '../users/user.js';
import type { IdentityRoutes } from './identity-api.js';

export interface AuthSessionRouteDependencies {
  db: Database;
  clock: Clock;
  rateLimits: RateLimits;
  signing: MainAuthSigning;
  sessionPolicy: SessionPolicy;
  apiPrefix: string;
}

const tokenResponse = z
  .object({
    accessToken: z.string(),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int(),
    sessionId: z.uuid(),
  })
  .meta({ id: 'AccessTokenResponse', description: 'The rotated refresh token is in the cookie' });

const me = z
  .object({
    id: z.uuid(),
    email: z.string().nullable(),
    emailVerified: z.boolean(),
    phone: z.string().nullable(),
    phoneVerified: z.boolean(),
    givenName: z.string().nullable(),
    familyName: z.string().nullable(),
    preferredUsername: z.string().nullable(),
    picture: z.string().nullable(),
    roles: z.array(z.string()),
    permissions: z.array(z.string()),
    mfaProtected: z.boolean().describe('At least one enabled sign-in method other than the password'),
    sessionId: z.string().optional(),
  })
  .meta({ id: 'CurrentUser' });

/** /auth/refresh, /auth/logout (the refresh cookie) and /auth/me (signed in: a live session's token). */
export function authSessionRoutes(deps: AuthSessionRouteDependencies): IdentityRoutes {
  const { db, clock, apiPrefix } = deps;
  return (api) => {
    api.add(
      {
        method: 'post',
        path: '/auth/refresh',
        summary: 'A new access token; the refresh cookie is rotated',
        tags: ['Session'],
        security: 'refresh-cookie',
        responses: {
          200: { description: 'New access token', schema: tokenResponse },
          401: { description: 'No live refresh token: sign in again (the cookie is cleared)' },
          429: { description: 'Too many refreshes (Retry-After)' },
        },
      },
      async (ctx) => {
        const request = requestInfo(ctx);
        const presented = readRefreshCookie(ctx);
        ctx.set('Cache-Control', 'no-store');
        if (!presented)
          throw new ApiError(401, 'invalid_refresh_token', 'The session has ended. Sign in again.');
        const now = clock.now();
        try {
          const tokens = await refreshSession(
            { db, signing: deps.signing, rateLimits: deps.rateLimits, sessionPolicy: deps.sessionPolicy },
            presented,
            request,
            now,
          );
          setRefreshCookie(ctx, apiPrefix, tokens.refreshToken.value, tokens.refreshToken.expiresAt, now);
          ctx.body = {
            accessToken: tokens.accessToken,
            tokenType: 'Bearer',
            expiresIn: tokens.expiresIn,
            sessionId: tokens.session.id,
          } satisfies z.infer<typeof tokenResponse>;
        } catch (error) {
          if (error instanceof ApiError && error.status === 401) clearRefreshCookie(ctx, apiPrefix);
          throw error;
        }
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/logout',
        summary: 'Log out: ends the cookie’s session and this browser’s sign-in to applications',
        tags: ['Session'],
        security: 'refresh-cookie',
        responses: {
          200: {
            description: 'Logged out (also when there was no live session)',
            schema: z.object({ loggedOut: z.literal(true) }),
          },
        },
      },
      async (ctx) => {
        const presented = readRefreshCookie(ctx);
        const now = clock.now();
        if (presented) {
          const browser = { engineSessionId: readEngineSessionId(ctx) };
          await logOut(db, presented, browser, requestInfo(ctx), now);
        }
        clearRefreshCookie(ctx, apiPrefix);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { loggedOut: true };
      },
    );

    api.add(
      {
        method: 'get',
        path: '/auth/me',
        summary: 'The profile of the signed-in user',
        tags: ['Session'],
        security: 'bearer',
        responses: {
          200: { description: 'The current user', schema: me },
          401: { description: 'No valid main-auth access token, or its session has ended' },
        },
      },
      async (ctx) => {
        const session = activeSessionOf(ctx);
        const user = await findUserById(db, session.userId);
        if (!user || user.status !== 'active') {
          throw new ApiError(401, 'unauthorized', 'This account is no longer available.');
        }
        const [access, methods] = await Promise.all([
          loadUserAccess(db, user.id),
          loadUserMethodStates(db, user.id),
        ]);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          id: user.id,
          email: user.email,
          emailVerified: user.emailVerified,
          phone: user.phone,
          phoneVerified: user.phoneVerified,
          givenName: user.givenName,
          familyName: user.familyName,
          preferredUsername: user.preferredUsername,
          picture: user.picture,
          roles: access.roles,
          permissions: access.permissions,
          mfaProtected: methods
            .list()
            .some((method) => method.type !== 'password' && method.isEnabled && method.isVerified),
          sessionId: session.id,
        } satisfies z.infer<typeof me>;
      },
    );
  };
}
