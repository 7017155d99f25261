import type { Queryable } from '../../db/database.js';
import { findPasswordHash, replacePasswordHash } from './password-credential.js';
import { checkPassword, hashPassword, type PasswordHashing } from './password-hash.js';

/**
 * Checks a user's password (same work and time for an unknown user or a user without a password:
 * password-hash.ts). A match against a hash made before passwords were normalized re-hashes the
 * normalized password, so the account needs only the normal check from then on. `known`: the hash was
 * read already (with the login counters' claim), so it is not read again.
 */
export async function verifyUserPassword(
  db: Queryable,
  userId: string | undefined,
  password: string,
  now: Date,
  hashing: PasswordHashing,
  known?: { storedHash: string | undefined },
): Promise<boolean> {
  const storedHash = known ? known.storedHash : userId ? await findPasswordHash(db, userId) : undefined;
  const check = await checkPassword(storedHash, password, hashing);
  if (check === 'match_unnormalized') {
    await replacePasswordHash(db, userId!, storedHash!, await hashPassword(password, hashing), now);
  }
  return check !== 'mismatch';
}
