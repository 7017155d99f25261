import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';
import { z } from 'zod';
import { defaults } from '../../defaults.js';

/**
 * Email and phone as users type them, and as we store them: email trimmed and lower-cased, phone in
 * E.164 (+ and 8-15 digits; spaces, dashes, dots and parentheses dropped; a national number read as
 * one of the default country).
 *
 * The address is judged before it is lower-cased: Unicode lower-casing turns the Kelvin sign (U+212A)
 * into an ASCII "k", so "\u212Aate@example.com", another mailbox that a provider may have confirmed,
 * would become kate@example.com and match (or be taken for) kate's account. Only ASCII addresses pass.
 */
export const emailSchema = z
  .string()
  .trim()
  .max(320)
  .pipe(z.email({ message: 'must be an email address' }).toLowerCase());

/**
 * A number without `+` is a national number as people type it (`8 916 123-45-67`, `(916) 123 45 67`):
 * libphonenumber-js reads it with the trunk prefix and the rules of the default country
 * (defaults.phoneDefaultCountry) and gives its E.164 form, or nothing when it is not a valid number
 * there. A number with `+` gets its E.164 form too when it is a valid number (`+7 8 916…`, with the
 * trunk prefix after the country code, is `+7916…`: one phone, one spelling, one account); one no
 * numbering plan knows is taken as written.
 *
 * A number with an extension (`+1 650 253 0000 ext. 89`, `;ext=89`, `x89`) is no phone of one person:
 * its E.164 form is the switchboard's, shared by everyone behind it, and no SMS reaches the extension.
 * It stays as written and fails the pattern: a provider vouching for it did not link the account
 * holding the switchboard's number.
 */
function internationalForm(value: string): string {
  const parsed = value.startsWith('+')
    ? parsePhoneNumberFromString(value)
    : parsePhoneNumberFromString(value, defaults.phoneDefaultCountry as CountryCode);
  return parsed?.isValid() && !parsed.ext ? parsed.number : value;
}

export const phoneSchema = z
  .string()
  .trim()
  .transform((value) => internationalForm(value.replace(/[\s().-]/g, '')))
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
