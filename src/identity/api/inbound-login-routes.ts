import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';
import { requestInfo } from '../../http/request-info.js';
import { completeSignIn, InactiveUserError } from '../sessions/complete-sign-in.js';
import { readDeviceCookie, setDeviceCookie } from '../sessions/device-bindings.js';
import { inboundLoginTokenStarter, redeemInboundLoginToken } from '../sessions/inbound-login-tokens.js';
import { holdUnrevokedSession } from '../sessions/sessions.js';
import { isGrantRecordedRevoked } from '../../oidc/models/revoked-grant.js';
import type { MainAuthSigning } from '../sessions/main-auth-tokens.js';
import { setRefreshCookie } from '../sessions/refresh-cookie.js';
import type { IdentityRoutes } from './identity-api.js';

/** Tries per IP and minute: a token has 256 bits, this only keeps the endpoint cheap. */
export const inboundLoginRateLimit: RateLimitRule = {
  name: 'identity-inbound-login',
  points: 10,
  durationSeconds: 60,
};

const inboundLoginRequest = z
  .strictObject({ loginToken: z.string().min(1).max(200) })
  .meta({ id: 'InboundLoginRequest' });

const inboundLoginCompleted = z
  .object({
    status: z.literal('completed'),
    userId: z.uuid(),
    sessionId: z.uuid(),
    accessToken: z.string(),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int(),
  })
  .meta({
    id: 'InboundLoginCompleted',
    description: 'The refresh token is in the service_id_refresh_token cookie',
  });

/**
 * POST /auth/inbound: what /inbound-login.html sends (docs/inbound-sso.md). A one-time login token
 * from POST /oauth/sso/inbound becomes a main-auth session, exactly as the end of a login: device
 * binding, saved account, refresh cookie, access token in the body. Used once (one conditional UPDATE
 * in the same transaction as the session).
 */
export function inboundLoginRoutes(deps: {
  db: Database;
  clock: Clock;
  rateLimits: RateLimits;
  signing: MainAuthSigning;
  apiPrefix: string;
}): IdentityRoutes {
  const { db, clock, rateLimits, signing, apiPrefix } = deps;
  return (api) => {
    api.add(
      {
        method: 'post',
        path: '/auth/inbound',
        summary: 'Sign in with a one-time login token from a first-party service',
        tags: ['Session'],
        security: 'none',
        body: inboundLoginRequest,
        responses: {
          200: { description: 'Signed in', schema: inboundLoginCompleted },
          400: { description: 'Malformed request' },
          401: { description: 'The token is unknown, expired or used' },
          429: { description: 'Too many requests (Retry-After)' },
        },
      },
      async (ctx, body) => {
        const request = requestInfo(ctx);
        try {
          await rateLimits.consume(inboundLoginRateLimit, request.addressBlock);
        } catch (error) {
          throw error instanceof RateLimitExceeded ? error.toApiError() : error;
        }
        const deviceCookie = readDeviceCookie(ctx);
        const now = clock.now();
        const tokens = await db.transaction(async (trx) => {
          // The session the token's grant was made from is held until this commits, so a revocation
          // racing it ends the new session too (sessions.ts); held before the token is used, in the
          // order of every revocation (sessions, then tokens: endSessionsFromGrants).
          const starter = await inboundLoginTokenStarter(trx, body.loginToken);
          const starterLive =
            starter?.startedBySessionId === undefined ||
            (await holdUnrevokedSession(trx, starter.userId, starter.startedBySessionId));
          const redeemed = await redeemInboundLoginToken(trx, body.loginToken, now);
          if (!redeemed) return undefined;
          // That session has ended, or the grant was revoked (the user ended that sign-in to the
          // application, withdrew its consent...): the token is used up, no session. A revocation
          // racing this waited for the token and ends the new session (endSessionsFromGrants).
          const { startedBySessionId, grantId } = redeemed;
          if (!starterLive || (grantId !== undefined && (await isGrantRecordedRevoked(trx, grantId, now)))) {
            return undefined;
          }
          try {
            return await completeSignIn(
              trx,
              signing,
              {
                flow: 'login',
                userId: redeemed.userId,
                authMethods: ['sso'],
                request,
                deviceCookie,
                // The original sign-in's time: inbound SSO is no fresh authentication.
                authenticatedAt: redeemed.authTime,
                startedBySessionId,
                fromGrantId: grantId,
              },
              now,
            );
          } catch (error) {
            // Disabled since the token was made: the token is used up all the same (the commit).
            if (error instanceof InactiveUserError) return undefined;
            throw error;
          }
        });
        if (!tokens) {
          throw new ApiError(
            401,
            'invalid_login_token',
            'This sign-in link is no longer valid. Sign in again.',
          );
        }
        setRefreshCookie(ctx, apiPrefix, tokens.refreshToken.value, tokens.refreshToken.expiresAt, now);
        if (tokens.newDeviceSecret) setDeviceCookie(ctx, tokens.newDeviceSecret);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          status: 'completed',
          userId: tokens.session.userId,
          sessionId: tokens.session.id,
          accessToken: tokens.accessToken,
          tokenType: 'Bearer',
          expiresIn: tokens.expiresIn,
        } satisfies z.infer<typeof inboundLoginCompleted>;
      },
    );
  };
}
