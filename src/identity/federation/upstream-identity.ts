import { isStorableText } from '../../http/storable-input.js';
import { emailSchema, phoneSchema } from '../users/contact.js';
import type { ClaimMapping } from './oauth-provider-config.js';

/** Who the provider says the person is, in our terms (claim mapping applied). */
export interface UpstreamIdentity {
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  phone: string | undefined;
  phoneVerified: boolean;
  givenName: string | undefined;
  familyName: string | undefined;
}

function at(claims: Record<string, unknown>, path: string): unknown {
  let value: unknown = claims;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== ''
    ? value.trim()
    : typeof value === 'number' && Number.isFinite(value)
      ? String(value)
      : undefined;

/**
 * The longest subject and name parts we keep (user_auth_methods.external_subject, users.given_name and
 * family_name), in characters as PostgreSQL counts them. A provider's claims are its users' to write:
 * a longer value (or one carrying a NUL or a lone surrogate, which the database can't store) failed
 * the insert, and the person got a 500 instead of an account.
 */
const maxSubjectLength = 255;
const maxNamePartLength = 100;

const storable = (value: string | undefined, maxLength: number): string | undefined =>
  value !== undefined && [...value].length <= maxLength && isStorableText(value) ? value : undefined;

const flag = (claims: Record<string, unknown>, source: string | boolean): boolean =>
  typeof source === 'boolean' ? source : at(claims, source) === true || at(claims, source) === 'true';

/**
 * An OpenID Connect provider's claims: its ID token's, and its userinfo answer's over them. A
 * verification flag speaks of the address it came with: an email or phone number that userinfo sends
 * and the ID token doesn't (or another one) counts as verified only if userinfo itself says so. Merged
 * as they come, the ID token's `email_verified: true` for one address vouched for userinfo's other one,
 * and the sign-in matched (and linked) the account holding that other address.
 */
export function idTokenWithUserinfo(
  idToken: Record<string, unknown>,
  userinfo: Record<string, unknown>,
  mapping: ClaimMapping,
): Record<string, unknown> {
  const claims = { ...idToken, ...userinfo };
  const pairs = [
    [mapping.email, mapping.emailVerified],
    [mapping.phone, mapping.phoneVerified],
  ] as const;
  for (const [address, verified] of pairs) {
    if (typeof verified !== 'string') continue; // a constant: the provider vouches for every address
    const named = text(at(userinfo, address))?.toLowerCase();
    if (named === undefined || named === text(at(idToken, address))?.toLowerCase()) continue;
    withClaim(claims, verified, at(userinfo, verified));
  }
  return claims;
}

/** Sets the claim at a dot path, copying the objects on the way (never touching a prototype). */
function withClaim(claims: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let target = claims;
  for (const [index, key] of keys.entries()) {
    const own = Object.hasOwn(target, key) ? target[key] : undefined;
    const next =
      index === keys.length - 1 ? value : own !== null && typeof own === 'object' ? { ...own } : {};
    Object.defineProperty(target, key, { value: next, enumerable: true, writable: true, configurable: true });
    target = next as Record<string, unknown>;
  }
}

/**
 * Applies a provider's claim mapping. The subject is what identifies the person at the provider for
 * good (none, or one we can't store whole, is no identity: undefined); email and phone are normalised
 * as our users table keeps them (lowercase email, phone digits in E.164); a malformed one is left out,
 * and so is a name part we can't store whole (the account is made without it).
 */
export function mapUpstreamClaims(
  claims: Record<string, unknown>,
  mapping: ClaimMapping,
): UpstreamIdentity | undefined {
  const subject = storable(text(at(claims, mapping.subject)), maxSubjectLength);
  if (!subject) return undefined;
  const email = emailSchema.safeParse(text(at(claims, mapping.email)) ?? '').data;
  // Some providers give the number without its + (VK ID, Yandex): it is international all the same.
  const rawPhone = text(at(claims, mapping.phone))?.replace(/^(?!\+)/, '+');
  const phone = phoneSchema.safeParse(rawPhone ?? '').data;
  return {
    subject,
    email,
    emailVerified: email !== undefined && flag(claims, mapping.emailVerified),
    phone,
    phoneVerified: phone !== undefined && flag(claims, mapping.phoneVerified),
    givenName: storable(text(at(claims, mapping.givenName)), maxNamePartLength),
    familyName: storable(text(at(claims, mapping.familyName)), maxNamePartLength),
  };
}
