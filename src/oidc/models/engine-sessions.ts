import type { Queryable } from '../../db/database.js';

/**
 * How long an ended session's row is kept: far longer than any request that read the session before
 * it ended can still be running (and save it again); then the hourly cleanup deletes it.
 */
export const endedSessionKeptMs = 60 * 60 * 1000;

/** What the engine keeps in a session that we read (the rest is the engine's). */
export interface EngineSessionPayload {
  /** Per client signed in to in this browser: the grant of its latest authorization here. */
  authorizations?: Record<string, { grantId?: unknown }>;
  /** The login time, in seconds since the epoch. */
  loginTs?: unknown;
}

/** The grants a session names: one per client, the latest authorization of each in its browser. */
export function grantIdsNamedBy(session: EngineSessionPayload): string[] {
  return Object.values(session.authorizations ?? {})
    .map((authorization) => authorization.grantId)
    .filter((grantId): grantId is string => typeof grantId === 'string');
}

/** An engine session just ended. */
export interface EndedEngineSession {
  id: string;
  /** Stays the same when the engine gives the session a new id; the tokens issued in it carry it. */
  uid: string | undefined;
  /** The grants the session named, one per client (the latest authorization of each in this browser). */
  grantIds: string[];
}

/**
 * Ends the engine's (browser) sessions matching `where` (its `id`, every one of an `account_id`, or
 * one `id` only if it is that `account_id`'s):
 * marks them ended rather than deleting them. The engine saves a session at the end of every request
 * that read it, so a request that read one just before it ended would insert a deleted row again,
 * signed in (a stolen cookie sent in a loop wins that race); a marked row stays ended, whatever is
 * saved into it, and is never found again (the adapter's SessionAdapter). Answers the ones that were
 * live, as they were when they ended (the row locked by the update, so no save slips in between).
 */
export async function endEngineSessions(
  db: Queryable,
  where: { id: string; account_id?: string } | { account_id: string },
  now: Date,
): Promise<EndedEngineSession[]> {
  const keptUntil = new Date(now.getTime() + endedSessionKeptMs);
  const ended: { id: string; uid: string | null; payload: EngineSessionPayload }[] = await db('oidc_payloads')
    .where({ model: 'Session', ...where })
    .whereNull('ended_at')
    .where((query) => query.whereNull('expires_at').orWhere('expires_at', '>', now))
    .update(
      {
        ended_at: now,
        expires_at: db.raw('least(coalesce(expires_at, cast(? as timestamptz)), cast(? as timestamptz))', [
          keptUntil,
          keptUntil,
        ]),
      },
      ['id', 'uid', 'payload'],
    );
  return ended.map((session) => ({
    id: session.id,
    uid: session.uid ?? undefined,
    grantIds: grantIdsNamedBy(session.payload),
  }));
}

/**
 * The statement (not run: a `with` of the one that saves the session under its new id, the engine's
 * adapter) that ends the id the engine's session leaves when it gets a new one (any return from the
 * sign-in pages), if that id is still live; it answers the row it ended. The new row is live only when
 * this ended one: a logout or a revocation that ended the session while the request that renames it
 * was running (it read the session live) must not see it saved back to life under the new id. The
 * ended row is kept as long as the session would live, so an old id a browser still holds leads to the
 * new one (liveEngineSessionNamedBy).
 */
export function endReplacedEngineSession(db: Queryable, replacedId: string, now: Date) {
  return db('oidc_payloads')
    .where({ model: 'Session', id: replacedId })
    .whereNull('ended_at')
    .where((query) => query.whereNull('expires_at').orWhere('expires_at', '>', now))
    .update(
      {
        ended_at: now,
        expires_at: db.raw('coalesce(expires_at, cast(? as timestamptz))', [
          new Date(now.getTime() + endedSessionKeptMs),
        ]),
      },
      ['id'],
    );
}

/** A live engine session of a user, as its row holds it. */
export interface LiveEngineSession {
  id: string;
  uid: string | undefined;
  payload: EngineSessionPayload;
}

/**
 * The user's live engine session that the id a browser's cookie holds stands for: that row while it
 * is live, or else the live row of the same uid. The engine gives its session a new id whenever a
 * browser comes back from the sign-in pages (any interaction, a consent too) and ends the old id
 * (endReplacedEngineSession, which keeps that row as long as the session would live). A thief who
 * copied the cookie and went through one interaction holds the session under a new id, and the owner's
 * browser only the old one: a logout there must end the session the thief holds, not find the old id
 * ended and end nothing. Another user's session, or one no longer live under any id, is none.
 */
export async function liveEngineSessionNamedBy(
  db: Queryable,
  userId: string,
  engineSessionId: string,
  now: Date,
): Promise<LiveEngineSession | undefined> {
  const named: { uid: string | null } | undefined = await db('oidc_payloads')
    .where({ model: 'Session', id: engineSessionId, account_id: userId })
    .first('uid');
  if (!named) return undefined;
  const live: { id: string; uid: string | null; payload: EngineSessionPayload } | undefined = await db(
    'oidc_payloads',
  )
    .where({ model: 'Session', account_id: userId })
    .where((row) => {
      row.where({ id: engineSessionId });
      if (named.uid) row.orWhere({ uid: named.uid });
    })
    .whereNull('ended_at')
    .where((query) => query.whereNull('expires_at').orWhere('expires_at', '>', now))
    // The row the cookie names first, should it still be live.
    .orderByRaw('(id = ?) desc', [engineSessionId])
    .first('id', 'uid', 'payload');
  return live && { id: live.id, uid: live.uid ?? undefined, payload: live.payload };
}
