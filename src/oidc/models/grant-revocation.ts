import type { Queryable } from '../../db/database.js';
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
  await db('oauth_refresh_tokens')
    .whereIn('token_family_id', unique)
    .whereNull('revoked_at')
    .update({ revoked_at: now });
  await db('authorization_codes').whereIn('grant_id', unique).update({ is_used: true });
  await db('oidc_payloads').where({ model: 'Grant' }).whereIn('id', unique).delete();
  await recordRevokedGrants(db, unique, now);
}
