import { isUuid } from '../../identity/uuid.js';
import { isSessionRevokedHeld } from '../../identity/sessions/session-revoked-held.js';
import type { Queryable } from '../../db/database.js';
import { endBrowserSignInOf } from './user-sign-ins.js';

/**
 * The main-auth session that vouched for an engine (browser) session: the one that approved the QR
 * sign-in done on the OIDC pages. A thief holding a copied access token could approve a QR code shown
 * in their own browser and go on signing in to applications there after the owner ended the copied
 * session; now the engine session ends with it, and the grants issued in it are revoked.
 */

/**
 * Records that the main-auth session `startedBySessionId` vouched for the engine session `sessionUid`
 * (saved just now). When that session has ended meanwhile (between the approval and the browser's
 * return to the engine), the engine session ends at once: a revocation that committed before this
 * record could not see it.
 */
export async function recordEngineSessionStarter(
  db: Queryable,
  sessionUid: string,
  startedBySessionId: string,
  now: Date,
): Promise<void> {
  if (!isUuid(startedBySessionId)) return;
  await db('engine_session_starters')
    .insert({ session_uid: sessionUid, started_by_session_id: startedBySessionId })
    .onConflict('session_uid')
    .ignore();
  // Without the share lock, the browser went on signing in to applications after a revocation in
  // flight had looked for the engine sessions the approver vouched for.
  if (await isSessionRevokedHeld(db, startedBySessionId)) {
    await endEngineSignInsStartedBy(db, [startedBySessionId], now);
  }
}

/**
 * Ends the engine sessions these main-auth sessions vouched for (endBrowserSignInOf: the session marked
 * ended, its grants revoked with their refresh and access tokens). Run it in the transaction that ends
 * the main-auth sessions (revokeSessionsWhere, sessions.ts).
 */
export async function endEngineSignInsStartedBy(
  db: Queryable,
  sessionIds: readonly string[],
  now: Date,
): Promise<void> {
  if (sessionIds.length === 0) return;
  const started: { id: string; account_id: string }[] = await db('oidc_payloads')
    .where({ model: 'Session' })
    .whereNull('ended_at')
    .whereIn(
      'uid',
      db('engine_session_starters').whereIn('started_by_session_id', sessionIds).select('session_uid'),
    )
    .select('id', 'account_id');
  for (const session of started) {
    if (session.account_id) await endBrowserSignInOf(db, session.account_id, session.id, now);
  }
}
