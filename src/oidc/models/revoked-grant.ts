import { EventEmitter } from 'node:events';
import type { Queryable } from '../../db/database.js';
import { chunksOf } from '../../db/statement-chunks.js';
// From the defaults, not resource-server.ts: that loads the engine, which the CLI (revoking a user's
// sessions records their grants here) has no use for.
import { defaults } from '../../defaults.js';

/**
 * How long a revoked grant is remembered: longer than any access token issued from it can still live
 * (one user-token lifetime, plus a minute for a token being issued while the grant is revoked).
 */
export const revokedGrantRememberedMs = (defaults.lifetimes.userAccessToken + 60) * 1000;

export interface RevokedGrant {
  grantId: string;
  expiresAt: Date;
}

const revocations = new EventEmitter();

/** Calls `listener` whenever this process records revoked grants (the node's registry learns at once). */
export function onGrantsRevoked(listener: (revoked: RevokedGrant[]) => void): () => void {
  revocations.on('revoked', listener);
  return () => revocations.off('revoked', listener);
}

/**
 * Records that these grants are revoked: the access tokens issued from them are refused from now on,
 * on this node at once and on every other within a poll (src/oidc/revoked-grants.ts). Inside a
 * transaction the node learns it before the commit: should the transaction fail, its tokens are
 * refused here a little early, never accepted late.
 */
export async function recordRevokedGrants(db: Queryable, grantIds: string[], now: Date): Promise<void> {
  const unique = [...new Set(grantIds.filter(Boolean))];
  if (unique.length === 0) return;
  const expiresAt = new Date(now.getTime() + revokedGrantRememberedMs);
  // A user's grants can be more than one statement binds (statement-chunks.ts).
  for (const chunk of chunksOf(unique)) {
    await db('oauth_revoked_grants')
      .insert(chunk.map((grantId) => ({ grant_id: grantId, expires_at: expiresAt })))
      .onConflict('grant_id')
      // Again in the feed, for the nodes that forgot it (an old row the cleanup has not deleted yet).
      .merge({ expires_at: expiresAt, recorded_at: db.raw('now()') });
  }
  announceGrantsRevoked(unique.map((grantId) => ({ grantId, expiresAt })));
}

/**
 * Whether this grant is recorded as revoked (and still remembered): in the caller's transaction, what
 * a revocation committed before this read. An inbound login made from the grant's access token then
 * starts no session (inbound-login-routes.ts).
 */
export async function isGrantRecordedRevoked(db: Queryable, grantId: string, now: Date): Promise<boolean> {
  const row: unknown = await db('oauth_revoked_grants')
    .where({ grant_id: grantId })
    .where('expires_at', '>', now)
    .first('grant_id');
  return row !== undefined;
}

/** Tells this process's registry that these grants are revoked (another worker's too: worker-notices.ts). */
export function announceGrantsRevoked(revoked: RevokedGrant[]): void {
  revocations.emit('revoked', revoked);
}

/**
 * The grants recorded as revoked since `since` (the database's clock) and not yet expired, with the
 * database's time of this look (the next look starts from it).
 */
export async function revokedGrantsSince(
  db: Queryable,
  since: Date,
  now: Date,
): Promise<{ lookedAt: Date; revoked: RevokedGrant[] }> {
  const { rows } = (await db.raw(
    `select now() as looked_at,
            coalesce(json_agg(json_build_object('grant_id', grant_id, 'expires_at', expires_at)), '[]') as revoked
       from oauth_revoked_grants
      where recorded_at > ? and expires_at > ?`,
    [since, now],
  )) as { rows: [{ looked_at: Date; revoked: { grant_id: string; expires_at: string }[] }] };
  const [row] = rows;
  return {
    lookedAt: row.looked_at,
    revoked: row.revoked.map((grant) => ({ grantId: grant.grant_id, expiresAt: new Date(grant.expires_at) })),
  };
}
