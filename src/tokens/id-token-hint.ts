import { compactVerify, decodeProtectedHeader } from 'jose';
import { z } from 'zod';
import type { PublishedKeySet } from '../keys/published-key-set.js';

const hintClaims = z.object({
  iss: z.string(),
  sub: z.string().min(1),
  aud: z.union([z.string(), z.array(z.string()).min(1)]),
  azp: z.string().optional(),
});

export interface IdTokenHint {
  userId: string;
  clientId: string;
}

/**
 * Verifies an id_token_hint (OIDC RP-Initiated Logout §2): our signature (RS256, a published key of the
 * `oidc` purpose, including one replaced less than 24 hours ago), our issuer, one client audience.
 * Expiry is not checked: a hint may be an old id_token. Returns undefined when it is not valid.
 */
export async function verifyIdTokenHint(
  hint: string,
  keySet: PublishedKeySet,
  issuer: string,
): Promise<IdTokenHint | undefined> {
  try {
    const header = decodeProtectedHeader(hint);
    const key = await keySet.resolverFor('oidc')(header as never);
    const { payload } = await compactVerify(hint, key, { algorithms: ['RS256'] });
    const claims = hintClaims.parse(JSON.parse(new TextDecoder().decode(payload)));
    if (claims.iss !== issuer) return undefined;
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    const clientId = audiences.length === 1 ? audiences[0]! : claims.azp;
    if (!clientId || !audiences.includes(clientId)) return undefined;
    return { userId: claims.sub, clientId };
  } catch {
    return undefined;
  }
}
