import type { Knex } from 'knex';
import type { SecurityNotifications } from '../notifications/security-notifications.js';
import type { PasswordHashing } from './password-hash.js';
import type { VerificationDeps } from '../verification/verification-codes.js';

/**
 * Revokes a user's main-auth sessions (and their refresh tokens) except one, and ends every sign-in of
 * the user through the OIDC pages with every client's tokens, inside the caller's transaction; returns
 * how many sessions ended. identity-core's revokeUserSessions is wired here.
 */
export type RevokeOtherSessions = (
  trx: Knex.Transaction,
  userId: string,
  exceptSessionId?: string,
) => Promise<number>;

/**
 * Records on the session that its user just proved who they are (the current password of a change):
 * false when the session is no longer live. identity-core's recordAuthentication is wired here.
 */
export type RecordSessionAuthentication = (trx: Knex.Transaction, sessionId: string) => Promise<boolean>;

/** What the password flows (reset, change) need. */
export interface PasswordDeps extends VerificationDeps {
  /** Public origin of the service: reset links point to `<issuer>/<lang>/reset-password`. */
  issuer: string;
  revokeOtherSessions: RevokeOtherSessions;
  recordSessionAuthentication: RecordSessionAuthentication;
  /** Tells the user their password was changed or reset. */
  notifications: SecurityNotifications;
  passwordHashing: PasswordHashing;
}
