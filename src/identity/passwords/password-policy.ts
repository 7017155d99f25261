import { z } from 'zod';
import { ApiError } from '../../http/api-error.js';
import { isCommonPassword } from './common-passwords.js';
import { normalizePassword } from './password-hash.js';

/**
 * Password rules per OWASP ASVS (V2.1 / 6.2): at least 8 characters, at most 128, no composition rules,
 * no truncation, not a common password. The rules judge the password as it is hashed (NFKC-normalized,
 * password-hash.ts); length counts its Unicode code points, as users count characters.
 */
export const minimumPasswordLength = 8;
export const maximumPasswordLength = 128;

const lengthOf = (password: string) => [...normalizePassword(password)].length;

export const passwordSchema = z
  .string()
  .refine((value) => lengthOf(value) >= minimumPasswordLength, {
    message: `must have at least ${minimumPasswordLength} characters`,
  })
  .refine((value) => lengthOf(value) <= maximumPasswordLength, {
    message: `must have at most ${maximumPasswordLength} characters`,
  });

export type WeakPasswordReason = 'too_short' | 'too_long' | 'common' | 'contains_identifier';

const weakPassword = (reason: WeakPasswordReason, message: string) =>
  new ApiError(400, 'weak_password', message, {
    reason,
    minLength: minimumPasswordLength,
    maxLength: maximumPasswordLength,
  });

/**
 * Throws 400 `weak_password` (details.reason: too_short, too_long, common, contains_identifier) unless
 * the password may be set. `context` are the user's own identifiers (email, phone): a password equal to
 * one of them, or to an email's name part, is refused (ASVS 6.2.11, context-specific words).
 */
export function assertPasswordAcceptable(typed: string, context: readonly string[] = []): void {
  const password = normalizePassword(typed);
  const length = [...password].length;
  if (length < minimumPasswordLength) {
    throw weakPassword('too_short', `Use at least ${minimumPasswordLength} characters.`);
  }
  if (length > maximumPasswordLength) {
    throw weakPassword('too_long', `Use at most ${maximumPasswordLength} characters.`);
  }
  if (isCommonPassword(password)) {
    throw weakPassword('common', 'This password is too common: it is among the first that attackers try.');
  }
  const lowered = password.toLowerCase();
  const words = context.flatMap((value) => {
    const item = normalizePassword(value.trim()).toLowerCase();
    return item.includes('@') ? [item, item.split('@')[0]!] : [item];
  });
  if (words.some((word) => word.length > 0 && lowered === word)) {
    throw weakPassword('contains_identifier', 'Do not use your email address or phone number as password.');
  }
}
