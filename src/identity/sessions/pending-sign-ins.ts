import type { Queryable } from '../../db/database.js';
import { endOnboardingsOf, endOnboardingsStartedBy } from '../onboarding/onboardings.js';
import { retireCodesOf } from '../verification/verification-code-records.js';

/**
 * Ends the sign-ins a user started but nobody has finished yet: each is a session waiting to be born,
 * made while the user's old sessions were live, so ending "every session" must end them too (a thief
 * who asked for one just before the owner signed out everywhere would otherwise sign in with it after):
 *
 * - inbound-SSO login tokens (POST /oauth/sso/inbound) not yet used: they expire now;
 * - codes sent for the user still pending: one-time SSO codes for other clients (POST /oauth/sso/otc),
 *   sign-in codes, password reset codes, a contact's confirmation codes: they expire, so whoever read
 *   one (a shared inbox, a phone on a desk) can't sign in or set a password with it after the change;
 * - QR sign-ins the user approved that the waiting device has not taken: they expire now;
 * - sign-in flows (API or OIDC pages) that know the user and have steps left: they go, so a login that
 *   passed the old password before a change can't finish after it with a later step (terms, a plugin);
 * - onboardings after a registration through the pages: they go, so a copied onboarding cookie can't
 *   go on naming the account, changing its photo or giving a code-only account its first password.
 *
 * Run it in the transaction of the change (revokeUserSessions): all of it happens, or none. What one
 * session started ends with that session alone (endPendingSignInsStartedBy, below).
 */
export async function endPendingSignInsOf(db: Queryable, userId: string, now: Date): Promise<void> {
  await db('inbound_login_tokens')
    .where({ user_id: userId })
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .update({ expires_at: now });
  await retireCodesOf(db, userId);
  await db('auth_flow_sessions').where({ user_id: userId }).delete();
  await endOnboardingsOf(db, userId);
  await db('qr_login_requests')
    .where({ user_id: userId, status: 'approved' })
    .where('expires_at', '>', now)
    .update({ expires_at: now });
}

/**
 * Ends the sign-ins that these main-auth sessions started and nobody has finished: the one-time SSO
 * codes they asked for, not yet exchanged, the QR sign-ins they approved that the waiting device
 * has not taken, and the onboarding a registration through the service's pages began with its session.
 * Ending one session (a logout, a revocation from the security settings) must end them too: a thief
 * who asked for a code or approved a QR code with a stolen token would otherwise sign in with it after
 * the owner threw that session out, and whoever holds the onboarding cookie of a browser signed out
 * (a shared computer, a copy) would otherwise give the account a password of their own. Run it in the
 * transaction that ends the sessions (revokeSessionsWhere, sessions.ts).
 */
export async function endPendingSignInsStartedBy(
  db: Queryable,
  sessionIds: readonly string[],
  now: Date,
): Promise<void> {
  await db('verification_codes')
    .whereIn('session_id', sessionIds)
    .where({ status: 'pending' })
    .update({ status: 'expired' });
  await db('qr_login_requests')
    .whereIn('session_id', sessionIds)
    .where({ status: 'approved' })
    .where('expires_at', '>', now)
    .update({ expires_at: now });
  await endOnboardingsStartedBy(db, sessionIds);
}
