import { decodeProtectedHeader } from 'jose';
import type { Clock } from '../clock.js';
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
      /**
       * Whether the token acts with the user's roles and permissions: a main-auth token does; an OAuth
       * token only when its client is first-party and the roles scope was granted. Any other client's
       * token speaks for the user to that client, not with the user's authority over the service.
       */
      hasUserAuthority: boolean;
      /** Epoch seconds of the last authentication (main-auth tokens always carry it). */
      authTime: number | undefined;
      sessionId: string | undefined;
      tokenId: string | undefined;
      clientId: string | undefined;
      /** The authorization an OAuth token was issued from (its refresh-token family). */
      grantId: string | undefined;
      scopes: Set<string>;
      /** When the token was issued (`iat`, epoch seconds). */
      issuedAt: number | undefined;
    }
  | {
      kind: 'service';
      token: 'oauth-service';
      clientId: string;
      scopes: Set<string>;
      issuedAt: number | undefined;
    };

/** What the service knows now about an OAuth access token's client, grant and user (src/oidc answers it). */
export interface OAuthTokenStanding {
  /**
   * undefined when the token may no longer be used: its grant revoked, its client disabled or gone, its
   * user (absent for a service token) disabled or gone.
   */
  check(token: {
    clientId: string;
    grantId: string | undefined;
    userId: string | undefined;
    /** The token's `iat`, epoch seconds: a token issued before its client was last disabled is refused. */
    issuedAt: number | undefined;
  }): Promise<{ firstParty: boolean; allowedScopes: readonly string[] } | undefined>;
}

/**
 * The token's scopes its client is still allowed. An administrator who takes a scope from a client
 * (a service client's `service:<permission>`, a first-party client's `roles`) takes it from the tokens
 * the client already holds too, as a disable does, not only from the next ones: the client is read
 * from memory at every use anyway.
 */
export function scopesStillAllowed(scopes: ReadonlySet<string>, allowed: readonly string[]): Set<string> {
  const allowance = new Set(allowed);
  return new Set([...scopes].filter((scope) => allowance.has(scope)));
}

/** Whether a main-auth access token's session is still live (src/identity/sessions answers it). */
export interface MainAuthSessionStanding {
  /** False once the session is logged out, revoked, expired or idle, or its user disabled. */
  isLive(token: { sessionId: string; userId: string }): Promise<boolean>;
}

/** A main-auth token whose session has ended: refused everywhere, whatever its exp says. */
export class SessionEndedError extends InvalidAccessTokenError {
  override name = 'SessionEndedError';
}

export interface TokenVerification {
  keySet: PublishedKeySet;
  issuer: string;
  audience: string;
  oauthTokens: OAuthTokenStanding;
  mainAuthSessions: MainAuthSessionStanding;
  /** Judges exp and nbf, and how long a verified token is remembered. */
  clock: Clock;
}

/**
 * What a verified token is worth now, at every use (a verified token may be remembered until its exp):
 * a main-auth token is refused once its session has ended (a copy taken before a logout acts nowhere,
 * on any API: no router has to remember it); an OAuth token once its grant is revoked, its client
 * disabled or its user disabled; it acts only with the scopes its client is still allowed; a user's
 * OAuth token has the user's authority only while its client is first-party and the roles scope was
 * granted (and is still allowed).
 */
export async function confirmStanding(
  principal: Principal,
  verification: TokenVerification,
): Promise<Principal> {
  if (principal.token === 'main-auth') {
    const { sessionId, userId } = principal;
    if (sessionId === undefined || !(await verification.mainAuthSessions.isLive({ sessionId, userId }))) {
      throw new SessionEndedError('the session of this token has ended');
    }
    return principal;
  }
  if (principal.clientId === undefined) return principal;
  const standing = await verification.oauthTokens.check({
    clientId: principal.clientId,
    grantId: principal.kind === 'user' ? principal.grantId : undefined,
    userId: principal.kind === 'user' ? principal.userId : undefined,
    issuedAt: principal.issuedAt,
  });
  if (!standing) {
    throw new InvalidAccessTokenError('this token was revoked, or its client or user disabled');
  }
  const scopes = scopesStillAllowed(principal.scopes, standing.allowedScopes);
  if (principal.kind === 'service') return { ...principal, scopes };
  return { ...principal, scopes, hasUserAuthority: standing.firstParty && scopes.has('roles') };
}

/**
 * Verifies a bearer access token of one of the accepted kinds: signature, issuer, audience, expiry
 * (confirmStanding then tells what it is worth now). The header's typ says which verifier applies
 * (at+jwt = OAuth, JWT = main-auth); each verifier trusts only the keys of its own purpose, so a token
 * can't pass for the other kind by changing its header.
 */
export async function verifySignedToken(
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
      hasUserAuthority: true,
      authTime: claims.auth_time,
      sessionId: claims.sessionId,
      tokenId: claims.tokenId,
      clientId: undefined,
      grantId: undefined,
      scopes: new Set(),
      issuedAt: claims.iat,
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
        issuedAt: claims.iat,
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
      // Decided at every use by confirmStanding.
      hasUserAuthority: false,
      authTime: typeof claims.auth_time === 'number' ? claims.auth_time : undefined,
      sessionId: claims.sessionId,
      tokenId: undefined,
      clientId: claims.client_id,
      grantId: claims.grant_id,
      scopes: tokenScopes(claims),
      issuedAt: claims.iat,
    };
  }
  throw new InvalidAccessTokenError('unsupported token type');
}

/**
 * A user's token with the user's authority (hasUserAuthority) and the user holds the permission (or
 * `*`); a service holds the scope `service:<permission>`.
 */
export function principalHasPermission(principal: Principal, permission: string): boolean {
  return principal.kind === 'user'
    ? principal.hasUserAuthority && hasPermission(principal, permission)
    : principal.scopes.has(`${servicePrefix}${permission}`);
}
