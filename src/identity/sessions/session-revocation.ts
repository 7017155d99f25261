import type { Database } from '../../db/database.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { endBrowserSignInOf } from '../../oidc/models/user-sign-ins.js';
import { findRefreshToken } from './refresh-tokens.js';
import { revokeSession, revokeSessionAndItsBrowsers, revokeUserSessions } from './sessions.js';

/**
 * Revocations a user asks for (logout, one session, one sign-in to applications, all others), each
 * written to the audit log as identity.session.revoked in the same transaction as the revocation.
 */
function audit(
  trx: Parameters<typeof writeAuditEvent>[0],
  userId: string,
  request: RequestInfo,
  details: Record<string, unknown>,
  now: Date,
) {
  return writeAuditEvent(
    trx,
    { type: auditEventTypes.sessionRevoked, userId, ip: request.ip, userAgent: request.userAgent, details },
    now,
  );
}

/** DELETE /security/sessions/:id: false when it is not the user's live session. */
export async function revokeSessionOfUser(
  db: Database,
  revocation: { userId: string; sessionId: string; request: RequestInfo },
  now: Date,
): Promise<boolean> {
  return db.transaction(async (trx) => {
    const revoked = await revokeSession(trx, revocation.userId, revocation.sessionId, 'revoked_by_user', now);
    if (revoked) {
      await audit(
        trx,
        revocation.userId,
        revocation.request,
        { sessionIds: [revocation.sessionId], reason: 'revoked_by_user' },
        now,
      );
    }
    return revoked;
  });
}

/**
 * DELETE /security/app-sign-ins/:id: ends one sign-in of the user through the OIDC pages (that
 * browser's engine session, and the grants issued in it: endBrowserSignInOf); false when it is not
 * the user's live sign-in.
 */
export async function endAppSignInOfUser(
  db: Database,
  revocation: { userId: string; appSignInId: string; request: RequestInfo },
  now: Date,
): Promise<boolean> {
  return db.transaction(async (trx) => {
    const ended = await endBrowserSignInOf(trx, revocation.userId, revocation.appSignInId, now);
    if (ended) {
      await audit(
        trx,
        revocation.userId,
        revocation.request,
        { appSignInIds: [revocation.appSignInId], reason: 'revoked_by_user' },
        now,
      );
    }
    return ended;
  });
}

/** POST /security/sessions/revoke-all: every live session but the current one; answers how many. */
export async function revokeOtherSessionsOfUser(
  db: Database,
  revocation: { userId: string; currentSessionId: string; request: RequestInfo },
  now: Date,
): Promise<number> {
  return db.transaction(async (trx) => {
    const count = await revokeUserSessions(
      trx,
      revocation.userId,
      { exceptSessionId: revocation.currentSessionId, reason: 'revoked_by_user' },
      now,
    );
    if (count > 0) {
      await audit(
        trx,
        revocation.userId,
        revocation.request,
        { count, reason: 'revoke_all', keptSessionId: revocation.currentSessionId },
        now,
      );
    }
    return count;
  });
}

/**
 * POST /auth/logout: ends the session of the presented refresh token (also when that token was rotated
 * out: a copy of the cookie that refreshed first must not keep the session) with the user's other
 * sessions started in the same browser (its device binding), and the engine's session this
 * browser holds (`engineSessionId`, its cookie) when it is the same user's: signing out of the service
 * in a browser signs that browser out of the applications too, as an RP-initiated logout ends the
 * main-auth sessions of its browser (end-session.ts). The engine's session is marked ended, not
 * deleted, so an authorization in flight that read it can't save it back to life, and the grants
 * issued in it are revoked (endBrowserSignInOf): an application's refresh token obtained in this
 * browser must not outlive the user's logout here. A request without the engine's cookie (an API
 * client) ends the main-auth session alone; an unknown token, nothing.
 */
export async function logOut(
  db: Database,
  presented: string,
  browser: { engineSessionId?: string | undefined },
  request: RequestInfo,
  now: Date,
): Promise<boolean> {
  const token = await findRefreshToken(db, presented);
  if (!token) return false;
  return db.transaction(async (trx) => {
    // A dead token still names its user and session: whoever logs out with it wants them signed out.
    // One rotated out by another holder (a copy of the cookie refreshed first) ends the session too,
    // or the copy's newer token would go on refreshing after the owner's logout.
    // With it, the user's other sessions this browser started: a sign-in here since replaced its cookie,
    // and a copy of the replaced one must not outlive this logout (revokeSessionAndItsBrowsers).
    const ended = await revokeSessionAndItsBrowsers(trx, token.userId, token.sessionId, 'logout', now);
    if (ended.length > 0)
      await audit(trx, token.userId, request, { sessionIds: ended, reason: 'logout' }, now);
    const revoked = ended.includes(token.sessionId);
    if (browser.engineSessionId !== undefined) {
      await endBrowserSignInOf(trx, token.userId, browser.engineSessionId, now);
    }
    return revoked;
  });
}
