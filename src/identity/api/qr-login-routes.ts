import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { principalOf, type SessionAuthentications } from '../../http/bearer-auth.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';
import { requestInfo } from '../../http/request-info.js';
import { approveQrLoginRequest, qrLoginRequester, qrLoginStatus } from '../qr-login/qr-login-requests.js';
import { browserNameOf } from '../sessions/browser-name.js';
import type { IdentityRoutes } from './identity-api.js';

/** The waiting page polls about every 2 seconds for at most 2 minutes. */
export const qrStatusRateLimit: RateLimitRule = {
  name: 'identity-qr-status',
  points: 60,
  durationSeconds: 60,
};

const qrTokenBody = z.strictObject({ token: z.string().min(1).max(100) }).meta({ id: 'QrLoginToken' });
const qrStatus = z
  .object({ status: z.enum(['pending', 'approved', 'used', 'expired']) })
  .meta({ id: 'QrLoginStatus' });
const qrRequester = z
  .object({
    status: z.literal('pending').describe('Only a code that can still be approved is described'),
    browser: z.string().describe('The requesting browser, e.g. "Chrome on Windows"; empty if unknown'),
    ip: z.string().describe('The IP address the code was requested from; empty if unknown'),
    requestedAt: z.iso.datetime().describe('When the code was shown'),
    application: z
      .string()
      .nullable()
      .describe('The application the sign-in is for (its name); null when it signs in to this service'),
  })
  .meta({ id: 'QrLoginRequester' });

/**
 * The two sides of the `qr` step: POST /auth/qr/status (the waiting page: has the code been approved?),
 * POST /auth/qr/request (the signed-in device that scanned it: which device is asking?) and
 * POST /auth/qr/approve (that device says yes, as its user).
 */
export function qrLoginRoutes(deps: {
  db: Database;
  clock: Clock;
  rateLimits: RateLimits;
  /** The approving session's last authentication. */
  sessions: Pick<SessionAuthentications, 'lastAuthenticatedAt'>;
}): IdentityRoutes {
  const { db, clock, rateLimits, sessions } = deps;
  return (api) => {
    api.add(
      {
        method: 'post',
        path: '/auth/qr/status',
        summary: 'Whether a QR sign-in code has been approved',
        tags: ['Auth flow'],
        security: 'none',
        body: qrTokenBody,
        responses: {
          200: { description: 'The code’s state', schema: qrStatus },
          400: { description: 'Malformed request' },
          404: { description: 'No such code' },
          429: { description: 'Too many requests (Retry-After)' },
        },
      },
      async (ctx, body) => {
        try {
          await rateLimits.consume(qrStatusRateLimit, requestInfo(ctx).addressBlock);
        } catch (error) {
          throw error instanceof RateLimitExceeded ? error.toApiError() : error;
        }
        const status = await qrLoginStatus(db, body.token, clock.now());
        if (!status) throw new ApiError(404, 'qr_not_found', 'There is no such QR code.');
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { status };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/qr/request',
        summary: 'The device asking to be signed in by a QR code, for its approver',
        tags: ['Auth flow'],
        security: 'bearer',
        body: qrTokenBody,
        responses: {
          200: {
            description: 'The requesting device: its browser, IP address and when',
            schema: qrRequester,
          },
          400: { description: 'Malformed request' },
          401: { description: 'Not signed in' },
          403: { description: 'Not a user' },
          404: { description: 'No such code' },
          410: { description: 'The code expired, was used or approved already' },
        },
      },
      async (ctx, body) => {
        // Who holds the code's link is not always who showed it: a link sent by someone else ("click to
        // confirm") would sign the sender in. The approver sees the requesting device first; only a
        // signed-in user (who could approve) learns the requester's address, never the waiting page.
        const principal = principalOf(ctx);
        if (principal.kind !== 'user') throw new ApiError(403, 'forbidden', 'Only a user can approve.');
        const requester = await qrLoginRequester(db, body.token, clock.now());
        if (!requester) throw new ApiError(404, 'qr_not_found', 'There is no such QR code.');
        if (requester.status !== 'pending') {
          throw new ApiError(410, 'qr_expired', 'This QR code expired or was used. Show a new one.');
        }
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          status: 'pending',
          browser: browserNameOf(requester.userAgent),
          ip: requester.ip,
          requestedAt: requester.requestedAt.toISOString(),
          application: requester.application ?? null,
        };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/qr/approve',
        summary: 'Approve a QR sign-in as the signed-in user',
        tags: ['Auth flow'],
        security: 'bearer',
        body: qrTokenBody,
        responses: {
          200: { description: 'Approved: the waiting device signs in as this user', schema: qrStatus },
          400: { description: 'Malformed request' },
          401: { description: 'Not signed in' },
          410: { description: 'The code expired, was used or approved already' },
        },
      },
      async (ctx, body) => {
        const principal = principalOf(ctx);
        if (principal.kind !== 'user') throw new ApiError(403, 'forbidden', 'Only a user can approve.');
        // Approving proves nothing new about who holds this device: the waiting device's session gets
        // this session's last authentication, not a fresh one (a stolen token can't make a new session
        // pass re-authentication checks).
        const authTime = await sessions.lastAuthenticatedAt(principal);
        const approved = await approveQrLoginRequest(
          db,
          body.token,
          { userId: principal.userId, authTime, sessionId: principal.sessionId },
          clock.now(),
        );
        if (approved === 'session_ended') {
          throw new ApiError(401, 'session_ended', 'This session has ended. Sign in again.');
        }
        if (approved === 'not_pending') {
          throw new ApiError(410, 'qr_expired', 'This QR code expired or was used. Show a new one.');
        }
        ctx.body = { status: 'approved' };
      },
    );
  };
}
