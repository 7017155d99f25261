import type { Knex } from 'knex';
import type { VerificationDeps } from '../verification/verification-codes.js';

/**
 * Revokes a user's main-auth sessions (and their refresh tokens) except one, inside the caller's
 * transaction; returns how many were revoked. identity-core's revokeUserSessions is wired here.
 */
export type RevokeOtherSessions = (
  trx: Knex.Transaction,
  userId: string,
  exceptSessionId?: string,
) => Promise<number>;

/** What the password flows (reset, change) need. */
export interface PasswordDeps extends VerificationDeps {
  /** Public origin of the service: reset links point to `<issuer>/<lang>/reset-password`. */
  issuer: string;
  revokeOtherSessions: RevokeOtherSessions;
}
