import crypto from 'node:crypto';
import argon2 from 'argon2';

/**
 * argon2id at OWASP's recommended parameters (m=19456 KiB, t=2, p=1). argon2 runs on libuv's thread
 * pool, so hashing never blocks the event loop.
 */
const options = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/**
 * Passwords are hashed and checked in Unicode normalization form NFKC (OWASP ASVS 5 6.2.x, NIST SP
 * 800-63B 5.1.1.2): the same password typed on another system (é as one code point or as e + a
 * combining accent, a full-width digit) is the same password.
 */
export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(normalizePassword(password), options);
}

/**
 * `match`; `match_unnormalized`: the hash is of the password as typed, not normalized (made before
 * passwords were normalized; worth hashing again); `mismatch`.
 */
export type PasswordCheck = 'match' | 'match_unnormalized' | 'mismatch';

let decoyHash: Promise<string> | undefined;

/**
 * Checks a password against a stored hash: its NFKC form, then, for a hash made before passwords were
 * normalized, the password as typed if that differs. With no hash (unknown user, or a user without a
 * password), a decoy hash of the same cost is checked the same number of times instead, so the answer
 * takes the same time and nobody learns which identifiers exist.
 */
export async function checkPassword(
  storedHash: string | undefined,
  password: string,
): Promise<PasswordCheck> {
  const normalized = normalizePassword(password);
  const typedDiffers = normalized !== password;
  if (storedHash === undefined) {
    decoyHash ??= hashPassword(crypto.randomBytes(16).toString('base64url'));
    const decoy = await decoyHash;
    await verify(decoy, normalized);
    if (typedDiffers) await verify(decoy, password);
    return 'mismatch';
  }
  if (await verify(storedHash, normalized)) return 'match';
  // A hash of a normalized password never matches a string that is not normalized: this only finds
  // hashes made before normalization.
  if (typedDiffers && (await verify(storedHash, password))) return 'match_unnormalized';
  return 'mismatch';
}

/** Verifies a password against a stored hash (see checkPassword); false with no hash, after the decoy. */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  return (await checkPassword(storedHash, password)) !== 'mismatch';
}

async function verify(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}

/** Warms the decoy so the first unknown-identifier login is not slower than the others. */
export async function prepareDecoyHash(): Promise<void> {
  decoyHash ??= hashPassword(crypto.randomBytes(16).toString('base64url'));
  await decoyHash;
}
