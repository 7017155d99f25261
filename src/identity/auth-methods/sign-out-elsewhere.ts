import type { Queryable } from '../../db/database.js';
import { revokeUserSessions } from '../sessions/sessions.js';

/**
 * What removing a sign-in method (unlinking a provider, removing TOTP, turning a code method off) ends
 * in its transaction: every session of the user but `keptSessionId`, the one making the change, with
 * every sign-in through the OIDC pages (revokeUserSessions), as a password change does. A session
 * doesn't say which provider or secret proved it, and the owner removing one may be throwing out
 * whoever signed in with it (ASVS 5 7.4.3). Answers how many ended.
 */
export function signOutElsewhere(
  db: Queryable,
  userId: string,
  keptSessionId: string | undefined,
  now: Date,
): Promise<number> {
  const reason = 'auth_method_removed';
  return revokeUserSessions(
    db,
    userId,
    keptSessionId === undefined ? { reason } : { exceptSessionId: keptSessionId, reason },
    now,
  );
}
