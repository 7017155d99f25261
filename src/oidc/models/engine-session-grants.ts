import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';

/**
 * Every grant an engine (browser) session has named, by the session's uid. The session itself names
 * only the latest authorization of each application, and each authorization gets a grant of its own:
 * ending a browser's sign-in must revoke the earlier ones too, or an application that authorized
 * twice there keeps the first grant's tokens through the logout.
 */

/**
 * Records that the session `sessionUid` named these grants, kept until `expiresAt` (the session's
 * expiry, renewed at each save). `statement` is where the insert goes: the adapter passes the `with`
 * that saves the session, so both take one round trip.
 */
export async function recordSessionGrants(
  statement: Knex.QueryBuilder,
  sessionUid: string,
  grantIds: readonly string[],
  expiresAt: Date | null,
): Promise<void> {
  // In one order, so that two saves of the same session (under its old and new id) lock rows alike.
  const rows = [...grantIds]
    .sort()
    .map((grantId) => ({ session_uid: sessionUid, grant_id: grantId, expires_at: expiresAt }));
  await statement
    .insert(rows)
    .into('engine_session_grants')
    .onConflict(['session_uid', 'grant_id'])
    .merge(['expires_at']);
}

/** The grants the session `sessionUid` has named, however many times it authorized each application. */
export async function grantsNamedEverBy(db: Queryable, sessionUid: string): Promise<string[]> {
  const rows: { grant_id: string }[] = await db('engine_session_grants')
    .where({ session_uid: sessionUid })
    .select('grant_id');
  return rows.map((row) => row.grant_id);
}
