import type { Queryable } from '../../db/database.js';
import type { EngineSessionPayload, LiveEngineSession } from './engine-sessions.js';

/**
 * The engine session a browser held before it started another one. A thief who copied the engine's
 * cookie and consented with the copy holds the session under a new id (same uid); the owner's browser
 * then finds none under its old id, and the owner's next sign-in there starts a session with a new
 * uid. Ending that browser's sign-in (a logout) must end the session of the uid it held before too, or
 * the thief's copy goes on signing in to every application for 30 days.
 */

/**
 * Records that the engine session `sessionUid` (saved just now) was started in a browser whose cookie
 * named the session row `browserSessionId`, of another uid, that some account signed in to.
 */
export async function recordEarlierSessionOfBrowser(
  db: Queryable,
  sessionUid: string,
  browserSessionId: string,
): Promise<void> {
  const earlier: { uid: string | null } | undefined = await db('oidc_payloads')
    .where({ model: 'Session', id: browserSessionId })
    .whereNotNull('account_id')
    .first('uid');
  if (!earlier?.uid || earlier.uid === sessionUid) return;
  await db('engine_session_predecessors')
    .insert({ session_uid: sessionUid, earlier_uid: earlier.uid })
    .onConflict(['session_uid', 'earlier_uid'])
    .ignore();
}

/** The uids of the sessions the browser of the session `sessionUid` held before it, however far back. */
export async function earlierUidsOf(db: Queryable, sessionUid: string): Promise<string[]> {
  const found = new Set<string>([sessionUid]);
  for (let next = [sessionUid]; next.length > 0;) {
    const rows: { earlier_uid: string }[] = await db('engine_session_predecessors')
      .whereIn('session_uid', next)
      .select('earlier_uid');
    next = rows.map((row) => row.earlier_uid).filter((uid) => !found.has(uid));
    for (const uid of next) found.add(uid);
  }
  found.delete(sessionUid);
  return [...found];
}

/** The user's live engine sessions the browser of the session `sessionUid` held before it (earlierUidsOf). */
export async function liveEarlierSessionsOf(
  db: Queryable,
  userId: string,
  sessionUid: string | undefined,
  now: Date,
): Promise<LiveEngineSession[]> {
  if (!sessionUid) return [];
  const uids = await earlierUidsOf(db, sessionUid);
  if (uids.length === 0) return [];
  const rows: { id: string; uid: string | null; payload: EngineSessionPayload }[] = await db('oidc_payloads')
    .where({ model: 'Session', account_id: userId })
    .whereIn('uid', uids)
    .whereNull('ended_at')
    .where((query) => query.whereNull('expires_at').orWhere('expires_at', '>', now))
    .orderBy('id')
    .select('id', 'uid', 'payload');
  return rows.map((row) => ({ id: row.id, uid: row.uid ?? undefined, payload: row.payload }));
}
