import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { principalOf } from '../../http/bearer-auth.js';
import { jsonApiRouter } from '../../http/json-api.js';
import type { Logger } from '../../logger.js';
import { deleteConsent } from '../models/consent.js';
import { revokeRefreshTokensOf } from '../models/oauth-refresh-token.js';

/**
 * DELETE /oauth/consents/:clientId: the signed-in user (`signedIn`: a main-auth access token of a live
 * session) withdraws their consent to a client. The consent record goes, and with it every refresh
 * token of that user for that client; the next authorization shows the consent screen again. 204, or
 * 404 when there was none.
 */
export function consentRoutes(deps: {
  db: Database;
  clock: Clock;
  signedIn: Middleware;
  logger: Logger;
}): Router {
  const router = jsonApiRouter('/oauth/consents', deps.logger);
  router.delete('/:clientId', deps.signedIn, async (ctx) => {
    const principal = principalOf(ctx);
    if (principal.kind !== 'user')
      throw new ApiError(403, 'forbidden', 'Only a user can withdraw a consent.');
    const clientId = ctx.params.clientId!;
    const deleted = await deps.db.transaction(async (trx) => {
      const found = await deleteConsent(trx, principal.userId, clientId);
      if (found) await revokeRefreshTokensOf(trx, principal.userId, clientId, deps.clock.now());
      return found;
    });
    if (!deleted) throw new ApiError(404, 'consent_not_found', 'You have not consented to this client.');
    ctx.status = 204;
  });
  return router;
}
