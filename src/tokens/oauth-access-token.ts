import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import type { PublishedKeySet } from '../keys/published-key-set.js';
import { splitScope } from '../oidc/scopes.js';

/** The claims of an OAuth access token this provider issued (RFC 9068 profile plus our claims). */
export interface OAuthAccessTokenClaims extends JWTPayload {
  sub: string;
  client_id: string;
  scope?: string;
  roles?: string[];
  permissions?: string[];
  sessionId?: string;
  /** The authorization (grant) a user token was issued from: revoking it makes the token inactive. */
  grant_id?: string;
  serviceClient?: boolean;
}

export class InvalidAccessTokenError extends Error {
  override name = 'InvalidAccessTokenError';
}

/**
 * Verifies an OAuth access token: RS256 only, signed by a published key of the `oidc` purpose (so a
 * main-auth token is refused), our issuer, the ecosystem audience, typ at+jwt, not expired.
 */
export async function verifyOAuthAccessToken(
  token: string,
  keySet: PublishedKeySet,
  expected: { issuer: string; audience: string; clock: Clock },
): Promise<OAuthAccessTokenClaims> {
  try {
    const { payload } = await jwtVerify(token, keySet.resolverFor('oidc'), {
      issuer: expected.issuer,
      audience: expected.audience,
      algorithms: ['RS256'],
      // exp and nbf are judged by the service's clock, like every other time rule.
      currentDate: expected.clock.now(),
      typ: 'at+jwt',
      requiredClaims: ['sub', 'exp', 'iat', 'client_id'],
    });
    return payload as OAuthAccessTokenClaims;
  } catch (error) {
    if (error instanceof joseErrors.JOSEError || (error as Error).name === 'UntrustedKeyError') {
      throw new InvalidAccessTokenError((error as Error).message);
    }
    throw error;
  }
}

export function tokenScopes(claims: Pick<OAuthAccessTokenClaims, 'scope'>): Set<string> {
  return new Set(splitScope(claims.scope));
}
