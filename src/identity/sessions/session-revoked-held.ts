import type { Queryable } from '../../db/database.js';

/**
 * In the caller's transaction, after it recorded something a revocation of `sessionId` must end (a
 * grant the session started, an engine session it vouched for): whether that session is revoked, read
 * under a share lock by id alone. A revocation in flight may have looked for what the session started
 * before the caller's record was there; a plain read would see the session live (its revocation not
 * yet committed). The lock waits for that revocation to commit or roll back. A session not found is
 * not revoked: the caller's record stays, and a later revocation finds it.
 */
export async function isSessionRevokedHeld(db: Queryable, sessionId: string): Promise<boolean> {
  const row: { is_revoked: boolean } | undefined = await db('sessions')
    .where({ id: sessionId })
    .forShare()
    .first('is_revoked');
  return row?.is_revoked === true;
}
