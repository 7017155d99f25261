import crypto from 'node:crypto';

/**
 * SHA-256 of a high-entropy server-generated value (authorization code, refresh token, client secret),
 * base64url, 43 characters. Such values carry >= 256 random bits, so a fast hash is enough to make a
 * stolen table useless, and keeps the token endpoint fast (a slow password hash here is what caps
 * Ory Hydra's client-credentials throughput).
 */
export function sha256(value: string): string {
  return crypto.createHash('sha256').update(value).digest('base64url');
}

/** Constant-time equality of two strings of any length. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  // The usual case (a digest against a digest): equal lengths, compared as they are.
  if (left.length === right.length) return crypto.timingSafeEqual(left, right);
  // Else equal-length copies, so the time does not depend on where they differ.
  const length = Math.max(left.length, right.length, 64);
  const paddedLeft = Buffer.alloc(length);
  const paddedRight = Buffer.alloc(length);
  left.copy(paddedLeft);
  right.copy(paddedRight);
  return crypto.timingSafeEqual(paddedLeft, paddedRight) && left.length === right.length;
}

/** A random secret of `bytes` bytes, base64url. */
export function randomSecret(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}
