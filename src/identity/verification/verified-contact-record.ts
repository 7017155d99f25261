import type { Queryable } from '../../db/database.js';
import type { Identifier } from '../users/contact.js';

const uniqueViolation = '23505';

/**
 * Makes the identifier the user's confirmed email or phone (replacing the previous one). False when
 * another account holds it (the unique index decides, so two users racing for one address can't both
 * win); the transaction must then be rolled back.
 */
export async function setVerifiedContact(
  trx: Queryable,
  userId: string,
  identifier: Identifier,
  now: Date,
): Promise<boolean> {
  const change =
    identifier.kind === 'email'
      ? { email: identifier.value, email_verified: true }
      : { phone: identifier.value, phone_verified: true };
  try {
    await trx('users')
      .where({ id: userId })
      .update({ ...change, updated_at: now });
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === uniqueViolation) return false;
    throw error;
  }
}
