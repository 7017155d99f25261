import crypto from 'node:crypto';
import argon2 from 'argon2';

/**
 * argon2id at OWASP's recommended parameters (m=19456 KiB, t=2, p=1). argon2 runs on libuv's thread
 * pool, so hashing never blocks the event loop.
 */
const options = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, options);
}

let decoyHash: Promise<string> | undefined;

/**
 * Verifies a password against a stored hash. With no hash (unknown user, or a user without a
 * password), a decoy hash of the same cost is verified instead, so the answer takes the same time and
 * nobody learns which identifiers exist.
 */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  if (storedHash === undefined) {
    decoyHash ??= hashPassword(crypto.randomBytes(16).toString('base64url'));
    await argon2.verify(await decoyHash, password).catch(() => false);
    return false;
  }
  try {
    return await argon2.verify(storedHash, password);
  } catch {
    return false;
  }
}

/** Warms the decoy so the first unknown-identifier login is not slower than the others. */
export async function prepareDecoyHash(): Promise<void> {
  decoyHash ??= hashPassword(crypto.randomBytes(16).toString('base64url'));
  await decoyHash;
}
