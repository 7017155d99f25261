import type { Queryable } from '../../db/database.js';
import { chunksOf } from '../../db/statement-chunks.js';
import { endSessionsFromGrants } from '../../identity/sessions/sessions.js';
import { recordRevokedGrants } from './revoked-grant.js';

/**
 * Revokes these grants and everything issued from them: their refresh tokens, their codes (marked
 * used, not deleted, so that presenting one again is still recognised as a replay), the grants
 * themselves, and, by recording them as revoked, the access tokens they issued (inactive at once on
 * this node, within a poll on the others). Consents are not grants and stay. Run it in the caller's
 * transaction: a replayed code or reused refresh token (the engine's adapter), or the service's own
 * logout ending one browser's sign-in (user-sign-ins.ts). The main-auth sessions a first-party
 * application's inbound SSO started from the grants' access tokens end too (endSessionsFromGrants).
 */
export async function revokeGrants(db: Queryable, grantIds: string[], now: Date): Promise<void> {
  const unique = [...new Set(grantIds.filter(Boolean))];
  if (unique.length === 0) return;
  // First, in the order of every revocation (sessions, then tokens): the main-auth sessions inbound SSO
  // started from these grants' access tokens end with them, and its login tokens not yet used.
  await endSessionsFromGrants(db, unique, now);
  // A user's grants can be more than one statement binds (statement-chunks.ts): a chunk at a time,
  // table after table, so rows are locked in the order they were when one statement took each table.
  const chunks = chunksOf(unique);
  for (const chunk of chunks) {
    await db('oauth_refresh_tokens')
      .whereIn('token_family_id', chunk)
      .whereNull('revoked_at')
      .update({ revoked_at: now });
  }
  for (const chunk of chunks) {
    await db('authorization_codes').whereIn('grant_id', chunk).update({ is_used: true });
  }
  for (const chunk of chunks) {
    await db('oidc_payloads').where({ model: 'Grant' }).whereIn('id', chunk).delete();
  }
  await recordRevokedGrants(db, unique, now);
}

/**
 * Revokes every grant a client holds, of every user (revokeGrants): the client was disabled.
 */
export async function revokeGrantsOfClient(db: Queryable, clientId: string, now: Date): Promise<void> {
  await revokeGrants(db, await grantIdsOf(db, { clientId }), now);
}

/**
 * The grants a client holds, of one user or of all: those of its live refresh tokens (each family is
 * a grant) and the engine's Grant records (codes not yet redeemed, authorizations without offline
 * access).
 */
export async function grantIdsOf(
  db: Queryable,
  of: { clientId: string; userId?: string | undefined },
): Promise<string[]> {
  const families: { token_family_id: string }[] = await db('oauth_refresh_tokens')
    .where({ client_id: of.clientId, ...(of.userId === undefined ? {} : { user_id: of.userId }) })
    .whereNull('revoked_at')
    .distinct('token_family_id');
  const grants: { id: string }[] = await db('oidc_payloads')
    .where({ model: 'Grant', ...(of.userId === undefined ? {} : { account_id: of.userId }) })
    .whereRaw(`payload->>'clientId' = ?`, [of.clientId])
    .select('id');
  return [...families.map((row) => row.token_family_id), ...grants.map((row) => row.id)];
}
