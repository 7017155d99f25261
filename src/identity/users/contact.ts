import { z } from 'zod';

/**
 * Email and phone as users type them, and as we store them: email trimmed and lower-cased, phone in
 * E.164 (+ and 8-15 digits; spaces, dashes, dots and parentheses dropped).
 */
export const emailSchema = z
  .string()
  .trim()
  .max(320)
  .toLowerCase()
  .pipe(z.email({ message: 'must be an email address' }));

export const phoneSchema = z
  .string()
  .trim()
  .transform((value) => value.replace(/[\s().-]/g, ''))
  .pipe(
    z.string().regex(/^\+[1-9]\d{7,14}$/, 'must be a phone number in international form, e.g. +14155550123'),
  );

export type Identifier = { kind: 'email'; value: string } | { kind: 'phone'; value: string };

/** Reads what a user typed in the "email or phone" field; undefined when it is neither. */
export function parseIdentifier(input: string): Identifier | undefined {
  if (input.includes('@')) {
    const email = emailSchema.safeParse(input);
    return email.success ? { kind: 'email', value: email.data } : undefined;
  }
  const phone = phoneSchema.safeParse(input);
  return phone.success ? { kind: 'phone', value: phone.data } : undefined;
}
