import type { Queryable } from '../../db/database.js';
import { grantsNamedEverBy } from './engine-session-grants.js';
import { endSessionsFromGrants } from '../../identity/sessions/sessions.js';
import {
  endEngineSessions,
  grantIdsNamedBy,
  liveEngineSessionNamedBy,
  type LiveEngineSession,
} from './engine-sessions.js';
import { liveEarlierSessionsOf } from './engine-session-predecessors.js';
import { revokeGrants } from './grant-revocation.js';
import { recordRevokedGrants } from './revoked-grant.js';

/**
 * Ends everything a user holds through the OIDC side, in every browser and for every client: the
 * engine's sessions (a copied SSO cookie gets login_required), the grants and their refresh tokens,
 * the codes not yet redeemed, the sign-ins finished on the pages whose browser has not yet come back
 * for its code, and, by recording the grants as revoked, the access tokens issued from them. What revokeRefreshTokensOf does for one client, for all of them. Consents stay: the next
 * sign-in asks for the password, not for consent again. Run it in the transaction of the change that
 * calls for it (a password change or reset, "sign out everywhere", an administrator's revocation or
 * disable). Answers how many live engine sessions (sign-ins through the OIDC pages) ended.
 */
export async function endOidcSignInsOf(db: Queryable, userId: string, now: Date): Promise<number> {
  const tokens: { token_family_id: string }[] = await db('oauth_refresh_tokens')
    .where({ user_id: userId })
    .whereNull('revoked_at')
    .update({ revoked_at: now }, ['token_family_id']);
  // Redeemed codes stay: presenting one again is a replay, which they are kept to recognise.
  const codes: { grant_id: string }[] = await db('authorization_codes')
    .where({ user_id: userId, is_used: false })
    .delete(['grant_id']);
  const grants: { id: string }[] = await db('oidc_payloads')
    .where({ model: 'Grant', account_id: userId })
    .delete(['id']);
  // Sign-ins finished on the pages that the browser has not come back for yet (the engine's resume).
  await db('oidc_payloads').where({ model: 'Interaction', account_id: userId }).delete();
  // Marked, not deleted: an authorize in flight that read one must not save it back to life.
  const sessions = (await endEngineSessions(db, { account_id: userId }, now)).length;
  await recordRevokedGrants(
    db,
    [
      ...tokens.map((token) => token.token_family_id),
      ...codes.map((code) => code.grant_id),
      ...grants.map((grant) => grant.id),
    ],
    now,
  );
  return sessions;
}

/**
 * Ends one browser's sign-in through the OIDC pages, when it is this user's (the service's own logout
 * in that browser): the engine's session `engineSessionId`, marked ended, and the grants issued in it,
 * with their refresh tokens and, recorded as revoked, their access tokens. Those grants are the ones
 * the session names (the latest authorization of each application here) and those of the user's
 * refresh tokens issued in it (the engine stamps its session's uid on them), since every authorization
 * gets a grant of its own and the session names only the latest: an application that authorized again
 * here (prompt=none) still holds the earlier grant's refresh token. Grants of the same user in other
 * browsers stay, and so do consents: signing in again asks for the password, not for consent. Another
 * user's session, or one already ended, is left alone. Answers whether a session ended.
 */
export async function endBrowserSignInOf(
  db: Queryable,
  userId: string,
  engineSessionId: string,
  now: Date,
): Promise<boolean> {
  // The session the browser's id stands for: under a new id when a copy of the cookie went through the
  // sign-in pages since (liveEngineSessionNamedBy). Sessions first (endSessionsFromGrants, sessions.ts):
  // the main-auth sessions inbound SSO started from this sign-in's grants end before the engine session
  // is locked, as a revocation of the session that vouched for this browser (a QR approval) locks them
  // before it. Read here, ended below, with the sessions this browser held before (a copy of its
  // cookie renamed by a consent, when the owner signed in again here since: liveEarlierSessionsOf).
  const live = await liveEngineSessionNamedBy(db, userId, engineSessionId, now);
  if (!live) return false;
  const earlier = await liveEarlierSessionsOf(db, userId, live.uid, now);
  return (await endEngineSignIns(db, userId, [live, ...earlier], now))[0] === true;
}

/**
 * What a browser's sign-in through the OIDC pages was before the engine session it holds now (the one
 * ended by the engine itself at an RP-initiated logout, `sessionUid`): the user's live sessions of the
 * uids that browser held before (engine-session-predecessors.ts), ended with their grants. A thief's
 * copy renamed by a consent is one, when the owner signed in again there since.
 */
export async function endEarlierSignInsOfBrowser(
  db: Queryable,
  userId: string,
  sessionUid: string | undefined,
  now: Date,
): Promise<void> {
  await endEngineSignIns(db, userId, await liveEarlierSessionsOf(db, userId, sessionUid, now), now);
}

/** Ends these live engine sessions of the user and their grants; answers, for each, whether it ended. */
async function endEngineSignIns(
  db: Queryable,
  userId: string,
  sessions: readonly LiveEngineSession[],
  now: Date,
): Promise<boolean[]> {
  const grants: string[] = [];
  for (const live of sessions) {
    grants.push(
      ...(await grantsOfEngineSession(db, userId, {
        uid: live.uid,
        grantIds: grantIdsNamedBy(live.payload),
      })),
    );
  }
  await endSessionsFromGrants(db, grants, now);
  const ended: boolean[] = [];
  for (const live of sessions) {
    const [session] = await endEngineSessions(db, { id: live.id, account_id: userId }, now);
    if (session) await revokeGrantsOfEngineSession(db, userId, session, now);
    ended.push(session !== undefined);
  }
  return ended;
}

/** The account of the engine session row `engineSessionId`, live or ended (endBrowserSignInOf's user). */
export async function accountOfEngineSessionId(
  db: Queryable,
  engineSessionId: string,
): Promise<string | undefined> {
  const row: { account_id: string | null } | undefined = await db('oidc_payloads')
    .where({ model: 'Session', id: engineSessionId })
    .first('account_id');
  return row?.account_id ?? undefined;
}

/**
 * Revokes the grants issued in one engine session of the user (see endBrowserSignInOf): the ones it
 * names, every one it has named before (engine-session-grants.ts: an application that authorized
 * again there) and those of the user's refresh tokens stamped with its uid (which also covers a session
 * that named them before that record was kept). For a session the engine itself ended (an
 * RP-initiated logout), read from the session it had loaded.
 */
export async function revokeGrantsOfEngineSession(
  db: Queryable,
  userId: string,
  session: { uid?: string | undefined; grantIds: readonly string[] },
  now: Date,
): Promise<void> {
  await revokeGrants(db, await grantsOfEngineSession(db, userId, session), now);
}

/** The grants issued in one engine session of the user (revokeGrantsOfEngineSession). */
async function grantsOfEngineSession(
  db: Queryable,
  userId: string,
  session: { uid?: string | undefined; grantIds: readonly string[] },
): Promise<string[]> {
  if (!session.uid) return [...session.grantIds];
  const refreshedHere: { token_family_id: string }[] = await db('oauth_refresh_tokens')
    .where({ user_id: userId })
    .whereNull('revoked_at')
    .whereRaw(`payload->>'sessionUid' = ?`, [session.uid])
    .distinct('token_family_id');
  return [
    ...session.grantIds,
    ...(await grantsNamedEverBy(db, session.uid)),
    ...refreshedHere.map((token) => token.token_family_id),
  ];
}
