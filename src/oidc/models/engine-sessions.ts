import type { Queryable } from '../../db/database.js';

/**
 * How long an ended session's row is kept: far longer than any request that read the session before
 * it ended can still be running (and save it again); then the hourly cleanup deletes it.
 */
export const endedSessionKeptMs = 60 * 60 * 1000;

/**
 * Ends the engine's (browser) sessions matching `where` (its `id`, every one of an `account_id`, or
 * one `id` only if it is that `account_id`'s):
 * marks them ended rather than deleting them. The engine saves a session at the end of every request
 * that read it, so a request that read one just before it ended would insert a deleted row again,
 * signed in (a stolen cookie sent in a loop wins that race); a marked row stays ended, whatever is
 * saved into it, and is never found again (the adapter's SessionAdapter). Answers how many of them
 * were live.
 */
export async function endEngineSessions(
  db: Queryable,
  where: { id: string; account_id?: string } | { account_id: string },
  now: Date,
): Promise<number> {
  const keptUntil = new Date(now.getTime() + endedSessionKeptMs);
  const ended: { id: string }[] = await db('oidc_payloads')
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
      ['id'],
    );
  return ended.length;
}
