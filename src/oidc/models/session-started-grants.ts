import type { Queryable } from '../../db/database.js';
import { isUuid } from '../../identity/uuid.js';
import { isSessionRevokedHeld } from '../../identity/sessions/session-revoked-held.js';
import { revokeGrants } from './grant-revocation.js';

/**
 * Grants made from a main-auth session: the grant a one-time SSO code is exchanged for
 * (sso-code-grant.ts) is the asking session's sign-in to that client. A thief holding a copied access
 * token could ask for a code and have the client exchange it at once; the client's refresh token then
 * lived its 30 days after the owner ended the copied session. Now the grant ends with that session.
 */

/**
 * Records that `grantId` was made from the main-auth session `sessionId`; false (and the grant revoked)
 * when that session has ended: a revocation that committed before this record could not see it.
 */
export async function recordGrantStartedBy(
  db: Queryable,
  grantId: string,
  sessionId: string,
  now: Date,
): Promise<boolean> {
  if (!isUuid(sessionId)) return true;
  await db('session_started_grants')
    .insert({ grant_id: grantId, started_by_session_id: sessionId })
    .onConflict('grant_id')
    .ignore();
  // Without the share lock, the client kept the grant after a revocation in flight had looked for
  // this session's grants.
  if (!(await isSessionRevokedHeld(db, sessionId))) return true;
  await revokeGrants(db, [grantId], now);
  return false;
}

/** Revokes the grants made from these sessions. Run it in the transaction that ends them (sessions.ts). */
export async function revokeGrantsStartedBy(
  db: Queryable,
  sessionIds: readonly string[],
  now: Date,
): Promise<void> {
  if (sessionIds.length === 0) return;
  const rows: { grant_id: string }[] = await db('session_started_grants')
    .whereIn('started_by_session_id', sessionIds)
    .select('grant_id');
  await revokeGrants(
    db,
    rows.map((row) => row.grant_id),
    now,
  );
}

/**
 * The main-auth session a grant was made from, if any: the one that asked for the one-time SSO code it
 * was exchanged for, or the one whose QR approval signed in the browser (engine session) that issued it
 * (engine_session_starters). Ending that session revokes the grant; whatever the grant's tokens are
 * traded for (an inbound login, docs/inbound-sso.md) must end with it too.
 */
export async function sessionThatStartedGrant(db: Queryable, grantId: string): Promise<string | undefined> {
  const byCode: { started_by_session_id: string } | undefined = await db('session_started_grants')
    .where({ grant_id: grantId })
    .first('started_by_session_id');
  if (byCode) return byCode.started_by_session_id;
  // Driven by the starters (QR-approved browsers only, few), each probing the grants by its primary key
  // (session_uid, grant_id): engine_session_grants has no index on grant_id alone.
  const byBrowser: { started_by_session_id: string } | undefined = await db('engine_session_starters as s')
    .whereExists((grants) =>
      grants
        .select(db.raw('1'))
        .from('engine_session_grants as g')
        .whereRaw('g.session_uid = s.session_uid')
        .where('g.grant_id', grantId),
    )
    .first('s.started_by_session_id');
  return byBrowser?.started_by_session_id;
}
