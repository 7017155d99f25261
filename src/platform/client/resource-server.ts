import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type FlattenedJWSInput,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose';
import type { Context, Middleware } from 'koa';
import { keyPurposeMember } from '../../keys/published-key-purpose.js';

/**
 * The resource-server kit (docs/resource-server.md): Koa middleware for the ecosystem's other services
 * that verifies the access tokens this identity service issues, against its published keys, and
 * guards routes by permission or service scope. Light on purpose (jose only): a service that only
 * checks tokens must not load the identity service itself.
 */

/** The kinds of ecosystem access token (typ JWT: main-auth; typ at+jwt: OAuth, user or service). */
export type EcosystemTokenKind = 'main-auth' | 'oauth-user' | 'oauth-service';

/** Who a verified token speaks for: `ctx.state.principal` after `verifyEcosystemTokens`. */
export type EcosystemPrincipal =
  | {
      kind: 'user';
      token: 'main-auth' | 'oauth-user';
      userId: string;
      roles: string[];
      permissions: string[];
      /**
       * Whether the token acts with the user's roles and permissions: a main-auth token does; an OAuth
       * token only when its client is one of `firstPartyClients` and the `roles` scope was granted.
       * Any other application's token speaks for the user to that application, not with the user's
       * authority over the ecosystem.
       */
      hasUserAuthority: boolean;
      clientId: string | undefined;
      scopes: Set<string>;
      claims: JWTPayload;
    }
  | {
      kind: 'service';
      token: 'oauth-service';
      clientId: string;
      scopes: Set<string>;
      claims: JWTPayload;
    };

export interface ResourceServerOptions {
  /** The identity service's issuer (its ISSUER), e.g. https://id.example.com. */
  issuer: string;
  /** The audience ecosystem tokens carry (the identity service's API_AUDIENCE). */
  audience?: string;
  /** Default `<issuer>/.well-known/jwks.json`. */
  jwksUri?: string;
  /** The token kinds this service accepts; default all three. */
  accept?: readonly EcosystemTokenKind[];
  /** client_ids of the ecosystem's own applications: their OAuth user tokens with `roles` carry authority. */
  firstPartyClients?: readonly string[];
  /**
   * Whether OAuth user tokens of other applications are accepted (default true). Every access token
   * carries the one ecosystem audience, so a third-party application a user signed in to with only
   * `openid` holds a token this service verifies. It carries no authority (see `hasUserAuthority`),
   * but a route that needs only "a signed-in user" would serve that application the user's data.
   * False refuses them (401 invalid_token): only main-auth, service and `firstPartyClients`' tokens.
   */
  acceptThirdPartyUserTokens?: boolean;
  /** Seconds of clock difference tolerated on exp/iat (default 5). */
  clockToleranceSeconds?: number;
}

const servicePrefix = 'service:';
const wildcardPermission = '*';

export class InvalidEcosystemTokenError extends Error {
  override name = 'InvalidEcosystemTokenError';
}

/**
 * A verifier of ecosystem access tokens: signature by a key of the issuer's JWKS (fetched once, cached,
 * fetched again when a token names a kid it doesn't know: a key rotation), issuer, audience, expiry,
 * RS256 only, and the kind from the signed typ header.
 */
export function ecosystemTokenVerifier(options: ResourceServerOptions) {
  const issuer = options.issuer.replace(/\/+$/, '');
  const audience = options.audience ?? 'urn:ecosystem:api';
  const accept = new Set(options.accept ?? ['main-auth', 'oauth-user', 'oauth-service']);
  const firstParty = new Set(options.firstPartyClients ?? []);
  const keys = keysByPurpose(
    createRemoteJWKSet(new URL(options.jwksUri ?? `${issuer}/.well-known/jwks.json`)),
  );
  const checks = {
    issuer,
    audience,
    algorithms: ['RS256'],
    clockTolerance: options.clockToleranceSeconds ?? 5,
  };

  return async function verify(token: string): Promise<EcosystemPrincipal> {
    let typ: unknown;
    try {
      typ = decodeProtectedHeader(token).typ;
    } catch {
      throw new InvalidEcosystemTokenError('malformed token');
    }
    const kind =
      typ === 'JWT'
        ? 'main-auth'
        : typeof typ === 'string' && typ.toLowerCase() === 'at+jwt'
          ? 'oauth'
          : undefined;
    if (!kind) throw new InvalidEcosystemTokenError('not an ecosystem access token');
    const claims = await verifiedClaims(token, keys(kind === 'main-auth' ? 'main-auth' : 'oidc'), {
      ...checks,
      typ: kind === 'main-auth' ? 'JWT' : 'at+jwt',
      requiredClaims: kind === 'main-auth' ? ['sub', 'exp', 'sessionId'] : ['sub', 'exp', 'client_id'],
    });
    const scopes = new Set(typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : []);
    const principal: EcosystemPrincipal =
      kind === 'main-auth'
        ? {
            kind: 'user',
            token: 'main-auth',
            userId: claims.sub!,
            roles: strings(claims.roles),
            permissions: strings(claims.permissions),
            hasUserAuthority: true,
            clientId: undefined,
            scopes,
            claims,
          }
        : claims.serviceClient === true
          ? { kind: 'service', token: 'oauth-service', clientId: String(claims.client_id), scopes, claims }
          : {
              kind: 'user',
              token: 'oauth-user',
              userId: claims.sub!,
              roles: strings(claims.roles),
              permissions: strings(claims.permissions),
              hasUserAuthority: firstParty.has(String(claims.client_id)) && scopes.has('roles'),
              clientId: String(claims.client_id),
              scopes,
              claims,
            };
    if (!accept.has(principal.token)) {
      throw new InvalidEcosystemTokenError(`${principal.token} tokens are not accepted here`);
    }
    if (
      principal.token === 'oauth-user' &&
      options.acceptThirdPartyUserTokens === false &&
      !firstParty.has(String(principal.clientId))
    ) {
      throw new InvalidEcosystemTokenError(
        "tokens of the ecosystem's own applications only are accepted here",
      );
    }
    return principal;
  };
}

/**
 * Key resolvers that trust a key of the issuer's JWKS only for the tokens of its purpose (the member
 * the identity service publishes with each key): the main-auth key for main-auth tokens, the OIDC key
 * for OAuth access tokens. Told apart by the typ header alone, a token signed by the other purpose's
 * key would pass for the kind its header names. A key without the member vouches for nothing.
 */
/**
 * Errors of fetching or reading the issuer's key set: the operator's to see (thrown on). An error of the
 * token itself (an unknown `crit` header is JOSENotSupported too) is the caller's: a 401, not a 500.
 */
const keyResolutionErrors = new WeakSet<Error>();

function keysByPurpose(remote: ReturnType<typeof createRemoteJWKSet>) {
  return (purpose: 'main-auth' | 'oidc') =>
    async (header: JWTHeaderParameters, token: FlattenedJWSInput): ReturnType<typeof remote> => {
      if (typeof header.kid !== 'string') throw new InvalidEcosystemTokenError('the token names no key');
      // Fetches the set (again, on an unknown kid) and picks the key as jose does.
      const key = await remote(header, token).catch((error: unknown) => {
        if (error instanceof Error) keyResolutionErrors.add(error);
        throw error;
      });
      const published = remote.jwks()?.keys.find((candidate) => candidate.kid === header.kid) as
        Record<string, unknown> | undefined;
      if (published?.[keyPurposeMember] !== purpose) {
        throw new InvalidEcosystemTokenError(`the key ${header.kid} does not sign ${purpose} tokens`);
      }
      return key;
    };
}

async function verifiedClaims(
  token: string,
  keys: ReturnType<ReturnType<typeof keysByPurpose>>,
  checks: Parameters<typeof jwtVerify>[2],
): Promise<JWTPayload> {
  try {
    return (await jwtVerify(token, keys, checks)).payload;
  } catch (error) {
    if (
      (error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JOSENotSupported) &&
      keyResolutionErrors.has(error)
    ) {
      throw error;
    }
    if (error instanceof joseErrors.JOSEError) throw new InvalidEcosystemTokenError(error.message);
    throw error;
  }
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/**
 * Koa middleware: the request must carry a valid ecosystem access token (Authorization: Bearer); it
 * sets `ctx.state.principal`. Otherwise 401 with RFC 6750's WWW-Authenticate and `{ error, message }`.
 */
export function verifyEcosystemTokens(options: ResourceServerOptions): Middleware {
  const verify = ecosystemTokenVerifier(options);
  return async function requireEcosystemToken(ctx, next) {
    const token = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(ctx.get('authorization'))?.[1];
    if (!token) {
      refuse(ctx, 401, 'unauthorized', 'An access token is required (Authorization: Bearer).', 'Bearer');
      return;
    }
    let principal: EcosystemPrincipal;
    try {
      principal = await verify(token);
    } catch (error) {
      if (!(error instanceof InvalidEcosystemTokenError)) throw error;
      const message = `The access token is not valid: ${error.message}.`;
      refuse(ctx, 401, 'invalid_token', message, bearerChallenge('invalid_token', message));
      return;
    }
    ctx.state.principal = principal;
    await next();
  };
}

/** The principal `verifyEcosystemTokens` set; throws when the route is not behind it (a wiring bug). */
export function ecosystemPrincipalOf(ctx: Pick<Context, 'state'>): EcosystemPrincipal {
  const principal = (ctx.state as { principal?: EcosystemPrincipal }).principal;
  if (!principal) throw new Error('verifyEcosystemTokens must run before this route');
  return principal;
}

/**
 * Whether the principal may act with `permission`: a user token with the user's authority whose
 * permissions include it (or `*`); a service token holding the scope `service:<permission>`.
 */
export function principalMay(principal: EcosystemPrincipal, permission: string): boolean {
  if (principal.kind === 'service') return principal.scopes.has(`${servicePrefix}${permission}`);
  return (
    principal.hasUserAuthority &&
    (principal.permissions.includes(wildcardPermission) || principal.permissions.includes(permission))
  );
}

/** Guard (after verifyEcosystemTokens): 403 unless `principalMay(principal, permission)`. */
export function requirePermission(permission: string): Middleware {
  return async function guardPermission(ctx, next) {
    const principal = ecosystemPrincipalOf(ctx);
    if (!principalMay(principal, permission)) {
      const message =
        principal.kind === 'user' && !principal.hasUserAuthority
          ? `This token does not carry the user's authority; ${permission} needs a main-auth token or a first-party application's.`
          : `This needs the permission ${permission} (services: the scope ${servicePrefix}${permission}).`;
      refuse(ctx, 403, 'forbidden', message, bearerChallenge('insufficient_scope', message));
      return;
    }
    await next();
  };
}

/** Guard (after verifyEcosystemTokens): only a service token holding `scope` (e.g. `service:crm.aggregates.read`). */
export function requireServiceScope(scope: string): Middleware {
  if (!scope.startsWith(servicePrefix)) throw new Error(`a service scope starts with ${servicePrefix}`);
  return async function guardServiceScope(ctx, next) {
    const principal = ecosystemPrincipalOf(ctx);
    if (principal.kind !== 'service' || !principal.scopes.has(scope)) {
      const message = `This needs a service token with the scope ${scope}.`;
      refuse(ctx, 403, 'insufficient_scope', message, bearerChallenge('insufficient_scope', message, scope));
      return;
    }
    await next();
  };
}

function bearerChallenge(error: string, description: string, scope?: string): string {
  const quoted = (value: string) => `"${value.replace(/["\\]/g, '')}"`;
  return `Bearer error=${quoted(error)}, error_description=${quoted(description)}${scope ? `, scope=${quoted(scope)}` : ''}`;
}

function refuse(ctx: Context, status: number, error: string, message: string, challenge: string): void {
  ctx.status = status;
  ctx.set('WWW-Authenticate', challenge);
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error, message };
}
