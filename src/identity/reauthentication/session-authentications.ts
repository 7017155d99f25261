import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import type { SessionAuthentications } from '../../http/bearer-auth.js';
import type { SessionPolicy } from '../sessions/session-policy.js';
import { findActiveSession } from '../sessions/sessions.js';
import { reauthenticationMethodsOf } from './reauthentication-methods.js';

/** Where a main-auth user re-authenticates (below the identity API's prefix). */
export const reauthenticationPath = '/auth/reauthenticate';

/**
 * What requireRecentAuthentication reads for main-auth tokens: the last authentication recorded on the
 * token's live session (the login, or a re-authentication), and what to tell the user when it is too
 * old: the endpoint and the methods they have.
 */
export function sessionAuthentications(deps: {
  db: Database;
  clock: Clock;
  sessionPolicy: SessionPolicy;
  apiPrefix: string;
}): SessionAuthentications {
  return {
    async lastAuthenticatedAt(principal) {
      const session = principal.sessionId
        ? await findActiveSession(deps.db, principal.sessionId, deps.sessionPolicy, deps.clock.now())
        : undefined;
      if (!session || session.userId !== principal.userId) {
        throw new ApiError(401, 'session_ended', 'This session has ended. Sign in again.');
      }
      return session.lastAuthenticatedAt;
    },
    async howToReauthenticate(principal) {
      return {
        reauthenticate: `POST ${deps.apiPrefix}${reauthenticationPath}`,
        methods: await reauthenticationMethodsOf(deps.db, principal.userId),
      };
    },
  };
}
