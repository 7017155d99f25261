import type { Queryable } from '../../db/database.js';
import { findConsent } from '../models/consent.js';

/**
 * The scopes a one-time code may carry to a client, of those asked for and allowed: a first-party
 * client (an administrator's mark: the service's own applications) gets them all, as the user's own
 * front end asks for the code; any other client only those the user consented to it at authorize (the
 * consents record), as that client's own authorization would grant them (RFC 6749 §3.3, OIDC Core
 * §3.1.2.4). Asking for a code is no consent: the front end names the scopes, not the person.
 */
export async function scopesConsentedForCode(
  db: Queryable,
  grant: { userId: string; clientId: string; firstParty: boolean },
  scopes: readonly string[],
): Promise<string[]> {
  if (grant.firstParty) return [...scopes];
  const consent = await findConsent(db, grant.userId, grant.clientId);
  const consented = new Set(consent?.scopes ?? []);
  return scopes.filter((scope) => consented.has(scope));
}
