import type { Queryable } from '../../db/database.js';
import { recordRevokedGrants } from './revoked-grant.js';

/**
 * Revokes these grants and everything issued from them: their refresh tokens, their codes (marked
 * used, not deleted, so that presenting one again is still recognised as a replay), the grants
 * themselves, and, by recording them as revoked, the access tokens they issued (inactive at once on
 * this node, within a poll on the others). Consents are not grants and stay. Run it in the caller's
 * transaction: a replayed code or reused refresh token (the engine's adapter), or the service's own
 * logout ending one browser's sign-in (user-sign-ins.ts).
 */
export async function revokeGrants(db: Queryable, grantIds: string[], now: Date): Promise<void> {
  const unique = [...new Set(grantIds.filter(Boolean))];
  if (unique.length === 0) return;
  await db('oauth_refresh_tokens')
    .whereIn('token_family_id', unique)
    .whereNull('revoked_at')
    .update({ revoked_at: now });
  await db('authorization_codes').whereIn('grant_id', unique).update({ is_used: true });
  await db('oidc_payloads').where({ model: 'Grant' }).whereIn('id', unique).delete();
  await recordRevokedGrants(db, unique, now);
}
