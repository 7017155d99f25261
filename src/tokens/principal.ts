import { decodeProtectedHeader } from 'jose';
import type { PublishedKeySet } from '../keys/published-key-set.js';
import { hasPermission } from '../identity/access/user-access.js';
import { servicePrefix } from '../oidc/scopes.js';
import { mainAuthTokenType, verifyMainAuthAccessToken } from './main-auth-access-token.js';
import { InvalidAccessTokenError, tokenScopes, verifyOAuthAccessToken } from './oauth-access-token.js';

/** The kinds of ecosystem access token; each endpoint says which it accepts. */
export type TokenKind = 'main-auth' | 'oauth-user' | 'oauth-service';

/** Who a verified access token speaks for. */
export type Principal =
  | {
      kind: 'user';
      token: 'main-auth' | 'oauth-user';
      userId: string;
      roles: string[];
      permissions: string[];
      /** Epoch seconds of the last authentication (main-auth tokens always carry it). */
      authTime: number | undefined;
      sessionId: string | undefined;
      tokenId: string | undefined;
      clientId: string | undefined;
      scopes: Set<string>;
    }
  | { kind: 'service'; token: 'oauth-service'; clientId: string; scopes: Set<string> };

export interface TokenVerification {
  keySet: PublishedKeySet;
  issuer: string;
  audience: string;
}

/**
 * Verifies a bearer access token of one of the accepted kinds. The header's typ says which verifier
 * applies (at+jwt = OAuth, JWT = main-auth); each verifier trusts only the keys of its own purpose, so a
 * token can't pass for the other kind by changing its header.
 */
export async function verifyAccessToken(
  token: string,
  verification: TokenVerification,
  accept: readonly TokenKind[],
): Promise<Principal> {
  let typ: unknown;
  try {
    typ = decodeProtectedHeader(token).typ;
  } catch {
    throw new InvalidAccessTokenError('malformed token');
  }
  if (typ === mainAuthTokenType) {
    if (!accept.includes('main-auth'))
      throw new InvalidAccessTokenError('main-auth tokens are not accepted here');
    const claims = await verifyMainAuthAccessToken(token, verification.keySet, verification);
    return {
      kind: 'user',
      token: 'main-auth',
      userId: claims.sub,
      roles: claims.roles ?? [],
      permissions: claims.permissions ?? [],
      authTime: claims.auth_time,
      sessionId: claims.sessionId,
      tokenId: claims.tokenId,
      clientId: undefined,
      scopes: new Set(),
    };
  }
  if (typeof typ === 'string' && typ.toLowerCase() === 'at+jwt') {
    const claims = await verifyOAuthAccessToken(token, verification.keySet, verification);
    if (claims.serviceClient) {
      if (!accept.includes('oauth-service'))
        throw new InvalidAccessTokenError('service tokens are not accepted here');
      return {
        kind: 'service',
        token: 'oauth-service',
        clientId: claims.client_id,
        scopes: tokenScopes(claims),
      };
    }
    if (!accept.includes('oauth-user'))
      throw new InvalidAccessTokenError('OAuth access tokens are not accepted here');
    return {
      kind: 'user',
      token: 'oauth-user',
      userId: claims.sub,
      roles: claims.roles ?? [],
      permissions: claims.permissions ?? [],
      authTime: typeof claims.auth_time === 'number' ? claims.auth_time : undefined,
      sessionId: claims.sessionId,
      tokenId: undefined,
      clientId: claims.client_id,
      scopes: tokenScopes(claims),
    };
  }
  throw new InvalidAccessTokenError('unsupported token type');
}

/** A user holds the permission (or `*`); a service holds the scope `service:<permission>`. */
export function principalHasPermission(principal: Principal, permission: string): boolean {
  return principal.kind === 'user'
    ? hasPermission(principal, permission)
    : principal.scopes.has(`${servicePrefix}${permission}`);
}
