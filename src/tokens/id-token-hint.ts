import { compactVerify, decodeProtectedHeader } from 'jose';
import { z } from 'zod';
import type { PublishedKeySet } from '../keys/published-key-set.js';

const hintClaims = z.object({
  iss: z.string(),
  sub: z.string().min(1),
  aud: z.union([z.string(), z.array(z.string()).min(1)]),
  azp: z.string().optional(),
});

/**
 * Whether a JWS header's `typ` is an ID token's: none (OIDC Core sets none, and the engine writes none)
 * or `JWT` (RFC 7519's general one; RFC 7515 §4.1.9: case-insensitive, `application/` may be
 * omitted). Our access tokens are signed by the same OIDC key, so without this check one (`at+jwt`,
 * RFC 9068 §2.1) would pass as a hint: a user's access token does not say that the user logs out.
 */
export function hasIdTokenType(header: { typ?: unknown }): boolean {
  return (
    header.typ === undefined || (typeof header.typ === 'string' && /^(application\/)?jwt$/i.test(header.typ))
  );
}

export interface IdTokenHint {
  userId: string;
  clientId: string;
}

/**
 * Verifies an id_token_hint (OIDC RP-Initiated Logout §2): our signature (RS256, a published key of the
 * `oidc` purpose, including one replaced less than 24 hours ago), an ID token's `typ`, our issuer, one
 * client audience.
 * Expiry is not checked: a hint may be an old id_token. Returns undefined when it is not valid.
 */
export async function verifyIdTokenHint(
  hint: string,
  keySet: PublishedKeySet,
  issuer: string,
): Promise<IdTokenHint | undefined> {
  try {
    const header = decodeProtectedHeader(hint);
    if (!hasIdTokenType(header)) return undefined;
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
