import crypto from 'node:crypto';
import { sha256 } from '../../crypto/digest.js';

/** Spec (Limits): an inbound-SSO one-time code has 6 characters and lives 60 seconds. */
export const ssoCodeLength = 6;
export const ssoCodeLifetimeSeconds = 60;
/**
 * Wrong exchanges a live code survives. Every wrong code a client presents counts against every live
 * code of that client, so no code is ever judged against more than this many guesses.
 */
export const ssoCodeMaxAttempts = 5;

/**
 * Crockford's base32 alphabet (no I, L, O, U): 32 symbols, so 6 characters carry 30 bits, a thousand
 * times the space of 6 digits. The code is copied by programs, not typed from an SMS.
 */
const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function generateSsoCode(): string {
  let code = '';
  for (let index = 0; index < ssoCodeLength; index += 1) code += alphabet[crypto.randomInt(0, 32)];
  return code;
}

/** The stored form: the SHA-256 of the upper-cased code (the code itself is never stored). */
export function hashSsoCode(code: string): string {
  return sha256(code.trim().toUpperCase());
}
