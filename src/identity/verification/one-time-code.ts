import crypto from 'node:crypto';
import { sha256 } from '../../crypto/digest.js';

import { defaults } from '../../defaults.js';

/**
 * A code of `length` digits (spec: 6; settings.codes.length) from the CSPRNG (crypto.randomInt is uniform: no modulo bias): about 20 bits, the
 * ASVS minimum for an out-of-band code, made safe by the 5-attempt limit and the short lifetime.
 * Digits because people type them from an SMS on a phone keypad.
 */
export function generateOneTimeCode(length: number = defaults.codes.length): string {
  return String(crypto.randomInt(0, 10 ** length)).padStart(length, '0');
}

/** What users type, tolerated: spaces and dashes inside the code are dropped. */
export function normaliseCode(input: string): string {
  return input.replace(/[\s-]/g, '');
}

/** The stored form of a code: its SHA-256, so a copy of the table does not hand out live codes. */
export function hashCode(code: string): string {
  return sha256(normaliseCode(code));
}
