import crypto from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import type { PublishedKeySet } from '../keys/published-key-set.js';
import type { SigningKey } from '../keys/signing-keys.js';
import { InvalidAccessTokenError } from './oauth-access-token.js';

/** Lifetime of a main-auth access token (spec: Limits). */
export const mainAuthAccessTokenTtlSeconds = 15 * 60;
/** typ of main-auth access tokens; OAuth access tokens are at+jwt (RFC 9068). */
export const mainAuthTokenType = 'JWT';

/**
 * The main-auth access token: the service's own sign-in token and the ecosystem access token other
 * domains accept. RS256 with the main-auth key (never the OAuth key). No PII: the user is `sub`;
 * roles and permissions are read from storage at each issue (super_admin gets `*`).
 */
export interface MainAuthAccessTokenClaims extends JWTPayload {
  sub: string;
  /** Id of the refresh token this access token was issued with; identifies the current session's token. */
  tokenId: string;
  sessionId: string;
  /** How the user authenticated: pwd, otp, ... (OIDC amr values). */
  auth_method: string;
  /** When the user last authenticated (epoch seconds): re-authentication checks read it. */
  auth_time: number;
  roles: string[];
  permissions: string[];
}

export interface MainAuthTokenInput {
  userId: string;
  tokenId: string;
  sessionId: string;
  authMethod: string;
  authTime: Date;
  roles: string[];
  permissions: string[];
}

export async function issueMainAuthAccessToken(
  key: SigningKey,
  audience: { issuer: string; audience: string },
  input: MainAuthTokenInput,
  now: Date,
): Promise<{ token: string; expiresIn: number }> {
  const issuedAt = Math.floor(now.getTime() / 1000);
  const token = await new SignJWT({
    tokenId: input.tokenId,
    sessionId: input.sessionId,
    auth_method: input.authMethod,
    auth_time: Math.floor(input.authTime.getTime() / 1000),
    roles: input.roles,
    permissions: input.permissions,
  })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: mainAuthTokenType })
    .setIssuer(audience.issuer)
    .setAudience(audience.audience)
    .setSubject(input.userId)
    .setJti(crypto.randomUUID())
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + mainAuthAccessTokenTtlSeconds)
    .sign(key.privateKey);
  return { token, expiresIn: mainAuthAccessTokenTtlSeconds };
}

/** Verifies a main-auth access token: only keys of the main-auth purpose, so OAuth tokens are refused. */
export async function verifyMainAuthAccessToken(
  token: string,
  keySet: PublishedKeySet,
  expected: { issuer: string; audience: string; clock: Clock },
): Promise<MainAuthAccessTokenClaims> {
  try {
    const { payload } = await jwtVerify(token, keySet.resolverFor('main-auth'), {
      issuer: expected.issuer,
      audience: expected.audience,
      algorithms: ['RS256'],
      // exp and nbf are judged by the service's clock, like every other time rule.
      currentDate: expected.clock.now(),
      typ: mainAuthTokenType,
      requiredClaims: ['sub', 'exp', 'iat', 'tokenId', 'sessionId'],
    });
    return payload as MainAuthAccessTokenClaims;
  } catch (error) {
    if (error instanceof joseErrors.JOSEError || (error as Error).name === 'UntrustedKeyError') {
      throw new InvalidAccessTokenError((error as Error).message);
    }
    throw error;
  }
}
