import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { principalOf, type SessionAuthentications } from '../../http/bearer-auth.js';
import { jsonApiRouter } from '../../http/json-api.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';
import { requestInfo } from '../../http/request-info.js';
import type { Logger } from '../../logger.js';
import { issueSsoCode } from '../sso/issue-sso-code.js';

/** Codes a user may ask for in a minute (they replace each other; this bounds the table's growth). */
export const ssoCodeIssueRateLimit: RateLimitRule = {
  name: 'oauth-sso-otc',
  points: 10,
  durationSeconds: 60,
};

const otcRequest = z.strictObject({
  client_id: z.string().min(1).max(100),
  scope: z.string().max(500).optional(),
});

/**
 * POST /oauth/sso/otc (docs/inbound-sso.md): the signed-in user (`signedIn`: a main-auth access
 * token of a live session; an OAuth client's token can't mint codes for other clients) gets a
 * 6-character code valid 60 seconds for one named client. 201 { code, client_id, scope, expires_in,
 * expires_at }.
 */
export function ssoOtcRoutes(deps: {
  db: Database;
  clock: Clock;
  rateLimits: RateLimits;
  signedIn: Middleware;
  /** The session's last authentication: the code's tokens carry it as their auth_time. */
  sessions: Pick<SessionAuthentications, 'lastAuthenticatedAt'>;
  logger: Logger;
}): Router {
  const router = jsonApiRouter('/oauth/sso', deps.logger);
  router.post('/otc', deps.signedIn, async (ctx) => {
    const principal = principalOf(ctx);
    if (principal.kind !== 'user' || principal.token !== 'main-auth') {
      throw new ApiError(403, 'forbidden', 'Only a user signed in to this service can ask for a code.');
    }
    // A body that is not valid answers 400 invalid_request with the zod issues (error-handler.ts).
    const body = otcRequest.parse(ctx.request.body ?? {});
    try {
      await deps.rateLimits.consume(ssoCodeIssueRateLimit, principal.userId);
    } catch (error) {
      if (error instanceof RateLimitExceeded) throw error.toApiError();
      throw error;
    }
    const issued = await issueSsoCode(deps, {
      userId: principal.userId,
      clientId: body.client_id,
      scope: body.scope,
      ip: requestInfo(ctx).ip,
      // Asking for a code is no authentication: the code's tokens say when the session last had one.
      authTime: await deps.sessions.lastAuthenticatedAt(principal),
      sessionId: principal.sessionId,
    });
    ctx.status = 201;
    // A credential, as a token response is (RFC 6749 §5.1): never kept by a cache on the way.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      code: issued.code,
      client_id: issued.clientId,
      scope: issued.scope,
      expires_in: Math.round((issued.expiresAt.getTime() - deps.clock.now().getTime()) / 1000),
      expires_at: issued.expiresAt.toISOString(),
    };
  });
  return router;
}
