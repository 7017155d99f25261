import type { Queryable } from '../../db/database.js';
import { loadUserMethodStates } from '../auth-methods/user-method-states.js';

/** The sign-in methods that can confirm who the user is again: what they know or hold, not a token. */
export const reauthenticationMethodTypes = ['password', 'totp', 'email_otp', 'sms_otp'] as const;
export type ReauthenticationMethod = (typeof reauthenticationMethodTypes)[number];

/** The ones this user has and has not turned off (a password they turned off doesn't count). */
export async function reauthenticationMethodsOf(
  db: Queryable,
  userId: string,
): Promise<ReauthenticationMethod[]> {
  const states = await loadUserMethodStates(db, userId);
  return reauthenticationMethodTypes.filter((type) => states.isActive(type));
}
