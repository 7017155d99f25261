import type { Middleware } from 'koa';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { principalOf } from '../../http/bearer-auth.js';
import type { SessionPolicy } from './session-policy.js';
import { findActiveSession, type Session } from './sessions.js';

export interface ActiveSessionState {
  session: Session;
}

/**
 * After requireAccessToken(['main-auth']): the token's session must still be live (not revoked,
 * expired or idle). Access tokens are self-contained for 15 minutes; this is what keeps an ended
 * session's token away from the account in the meantime. Used through requireSignedIn.
 */
export function requireActiveSession(db: Database, clock: Clock, policy: SessionPolicy): Middleware {
  return async function activeSession(ctx, next) {
    const principal = principalOf(ctx);
    const sessionId = principal.kind === 'user' ? principal.sessionId : undefined;
    const session = sessionId ? await findActiveSession(db, sessionId, policy, clock.now()) : undefined;
    if (!session || principal.kind !== 'user' || session.userId !== principal.userId) {
      throw new ApiError(401, 'session_ended', 'This session has ended. Sign in again.');
    }
    (ctx.state as ActiveSessionState).session = session;
    await next();
  };
}

export function activeSessionOf(ctx: { state: unknown }): Session {
  const session = (ctx.state as Partial<ActiveSessionState>).session;
  if (!session) throw new Error('activeSessionOf used on a route without requireActiveSession');
  return session;
}
