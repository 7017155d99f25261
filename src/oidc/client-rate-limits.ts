import querystring, { type ParsedUrlQuery } from 'node:querystring';
import type { Context, Middleware, Next } from 'koa';
import type { Client, Provider } from 'oidc-provider';
import type { Clock } from '../clock.js';
import { renderPage } from '../http/pages.js';
import { peekRequestBody } from '../http/peek-request-body.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../http/rate-limit.js';
import { requestInfo } from '../http/request-info.js';
import type { Logger } from '../logger.js';
import { ThrottledWarnings } from '../throttled-warnings.js';
import { isValidClientId, parseBasicCredentials } from './client-authentication.js';
import { clientSecretIsCorrect, rememberProvenSecret } from './client-secret.js';
import { oauthRoutes } from './provider.js';
import { defaultRateLimitRule } from '../defaults.js';

type Endpoint = 'token' | 'introspect' | 'revoke' | 'authorize';

/**
 * Spec, Limits: per client_id (not per IP), 60-second windows. They count the requests the client
 * proved it made (see `provesClient`): nobody else can spend a client's budget.
 */
export const clientRateLimits = {
  token: defaultRateLimitRule('oauth-token'),
  introspect: defaultRateLimitRule('oauth-introspect'),
  revoke: defaultRateLimitRule('oauth-revoke'),
  authorize: defaultRateLimitRule('oauth-authorize'),
} satisfies Record<Endpoint, RateLimitRule>;

/**
 * Every other request (a wrong secret, a bad redirect_uri, a public client's call that anyone could
 * make): the same budgets per client_id AND IP, or per IP alone when it names no known client. An
 * attacker spends his own address's budget, not the client's.
 */
export const unprovenRequestLimits = {
  token: defaultRateLimitRule('oauth-token-unproven'),
  introspect: defaultRateLimitRule('oauth-introspect-unproven'),
  revoke: defaultRateLimitRule('oauth-revoke-unproven'),
  authorize: defaultRateLimitRule('oauth-authorize-unproven'),
} satisfies Record<Endpoint, RateLimitRule>;

const postEndpoints = new Map<string, Endpoint>([
  [oauthRoutes.token, 'token'],
  [oauthRoutes.introspection, 'introspect'],
  [oauthRoutes.revocation, 'revoke'],
]);

/** The engine reads request bodies itself, up to this size. */
const bodyLimit = 56 * 1024;

interface Credentials {
  clientId?: string | undefined;
  secret?: string | undefined;
  /** From the Authorization header (Basic), not the query or the body. */
  basic?: boolean;
  /** The refresh_token of a refresh_token grant (token endpoint, form body). */
  refreshToken?: string | undefined;
}

/**
 * Reads a refresh token ahead of the engine (adapters/oidc/knex-adapter.ts: the engine's own read of it,
 * kept for the engine in the same request). Undefined for no such token.
 */
export type RefreshTokenReadAhead = (
  token: string,
) => Promise<{ clientId?: unknown; consumed?: unknown; exp?: unknown } | undefined>;

/**
 * Rate limits of the OAuth endpoints, in front of the engine (whose ctx.oidc does not exist yet at
 * this point). The client_id comes from HTTP Basic, the query (authorize) or the form body, read
 * whether it has a Content-Length or is chunked; a client_id no client can have is refused before it
 * reaches a lookup or a counter. Which budget a request draws from:
 *
 * - the client's own (spec, per client_id) when the request proves it comes from the client: its
 *   secret (token, introspect, revoke), a live refresh token of the client (a public client's
 *   refresh_token grant: read here, ahead of the engine, which then takes the same read), or a token
 *   the engine issues to a public client (code + PKCE verifier: counted once issued);
 * - at authorize, with a registered redirect_uri: the client's budget per address (see
 *   `clientBudgetKey`);
 * - otherwise the same budget per client_id and IP, or per IP when no known client is named.
 *
 * The budgets live in the shared database store, so all nodes draw from them. Exceeding answers 429
 * with Retry-After: `temporarily_unavailable` (RFC 6749's code for a server that can't take the
 * request now) as JSON, or an error page for the browser-facing authorize endpoint.
 */
export function clientRateLimiting(deps: {
  rateLimits: RateLimits;
  provider: Provider;
  logger: Logger;
  clock: Clock;
  readRefreshTokenAhead: RefreshTokenReadAhead;
}): Middleware {
  const { rateLimits, provider, clock, readRefreshTokenAhead } = deps;
  const warnings = new ThrottledWarnings(deps.logger, deps.clock);

  // Synchronous for every other path: an async frame costs each request of the service a promise.
  return function limitPerClient(ctx, next) {
    const endpoint = endpointOf(ctx);
    return endpoint ? limit(ctx, endpoint, next) : next();
  };

  /**
   * A public client's refresh_token grant with a live refresh token of that client: only the client
   * holds it (rotated at every use, bound to the client), as only it holds a confidential client's
   * secret. Counted against the client's budget once, instead of the caller's and then the client's.
   */
  async function refreshTokenProves(client: Client, refreshToken: string | undefined): Promise<boolean> {
    if (refreshToken === undefined || client.clientAuthMethod !== 'none') return false;
    const token = await readRefreshTokenAhead(refreshToken);
    return (
      token !== undefined &&
      token.clientId === client.clientId &&
      !token.consumed &&
      typeof token.exp === 'number' &&
      token.exp * 1000 > clock.now().getTime()
    );
  }

  async function limit(ctx: Context, endpoint: Endpoint, next: Next): Promise<void> {
    const basic = parseBasicCredentials(ctx.get('authorization'));
    const credentials: Credentials = basic ? { ...basic, basic: true } : await credentialsOf(ctx, endpoint);
    if (credentials.clientId !== undefined && !isValidClientId(credentials.clientId)) {
      warnings.warn(
        'invalid_client_id',
        { path: ctx.path, length: credentials.clientId.length },
        'refused a client_id no client can have',
      );
      refuseClientId(ctx, endpoint, provider.issuer);
      return;
    }
    const client = credentials.clientId ? await provider.Client.find(credentials.clientId) : undefined;
    const proven =
      client !== undefined &&
      (provesClient(ctx, endpoint, client, credentials.secret) ||
        (await refreshTokenProves(client, credentials.refreshToken)));
    // Proven by the header's secret (authorize proves by redirect_uri instead): our introspection and
    // the engine authenticate with the same header and need not compare it again.
    if (proven && credentials.basic && endpoint !== 'authorize') {
      rememberProvenSecret(ctx, client, credentials.secret!);
    }
    const { ip, addressBlock } = requestInfo(ctx);
    // A token the engine issues to an unproven caller proves it was the client after all. Only a
    // public client can get one: a confidential client's request without its secret is refused by the
    // engine, so it is not held to the client's budget either (the answer stays 401, not 429). Its
    // point is taken ahead and given back unless a token is issued: checked ahead and counted after,
    // parallel exchanges all passed the check and overshot the budget by the number in flight.
    const countIfIssued =
      !proven && client !== undefined && endpoint === 'token' && client.clientAuthMethod === 'none';
    try {
      if (proven) {
        await rateLimits.consume(clientRateLimits[endpoint], clientBudgetKey(endpoint, client, addressBlock));
      } else if (countIfIssued) {
        await consumeBoth(
          rateLimits.consume(unprovenRequestLimits[endpoint], unprovenKey(client, addressBlock)),
          rateLimits.consume(clientRateLimits.token, client.clientId),
          () => giveBackIssuePoint(client.clientId),
        );
      } else {
        await rateLimits.consume(unprovenRequestLimits[endpoint], unprovenKey(client, addressBlock));
      }
    } catch (error) {
      if (!(error instanceof RateLimitExceeded)) throw error;
      if (error.rule === unprovenRequestLimits[endpoint]) {
        warnings.warn(
          'oauth_unproven_requests_limited',
          { path: ctx.path, clientId: client?.clientId, ip },
          'too many requests that do not prove their client; refused for a while',
        );
      }
      const who =
        error.rule === clientRateLimits[endpoint] && endpoint !== 'authorize'
          ? 'this client'
          : client
            ? 'this client from this address'
            : 'this address';
      answerTooManyRequests(ctx, endpoint, error, who);
      return;
    }
    if (!countIfIssued) return next();
    let issued = false;
    try {
      await next();
      issued = ctx.status === 200;
    } finally {
      if (!issued) await giveBackIssuePoint(client.clientId);
    }
  }

  /** A public client's point taken ahead of an exchange that issued nothing. */
  async function giveBackIssuePoint(clientId: string): Promise<void> {
    await rateLimits.giveBack(clientRateLimits.token, clientId).catch((error: unknown) => {
      warnings.warn(
        'oauth_rate_limit_not_given_back',
        { clientId, error: String(error) },
        'a point taken ahead of a token request could not be given back',
      );
    });
  }
}

/**
 * Both consumptions of a request, refused if either is: the second's point is given back (`giveBack`)
 * when it was taken and the first refused, as the request is not made.
 */
async function consumeBoth(
  first: Promise<void>,
  second: Promise<void>,
  giveBack: () => Promise<void>,
): Promise<void> {
  const [firstOutcome, secondOutcome] = await Promise.allSettled([first, second]);
  if (firstOutcome.status === 'rejected') {
    if (secondOutcome.status === 'fulfilled') await giveBack();
    throw firstOutcome.reason;
  }
  if (secondOutcome.status === 'rejected') throw secondOutcome.reason;
}

function endpointOf(ctx: Context): Endpoint | undefined {
  if (ctx.method === 'POST') return postEndpoints.get(ctx.path);
  if ((ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.path === oauthRoutes.authorization) {
    return 'authorize';
  }
  return undefined;
}

/**
 * Without HTTP Basic: the query (authorize) or the form body. With it, the header alone names the
 * client: the engine refuses a request that also has a client_secret in its body (one mechanism only,
 * lib/shared/client_auth.js), and a client_id there that differs from the header's.
 */
async function credentialsOf(ctx: Context, endpoint: Endpoint): Promise<Credentials> {
  if (endpoint === 'authorize') return { clientId: singleValue(ctx.query.client_id) };
  const form = await formBody(ctx);
  if (!form) return {};
  const clientId = singleValue(form.client_id);
  // Introspection authenticates with Basic only; the engine's token and revocation take the body too.
  const secret = endpoint === 'introspect' ? undefined : singleValue(form.client_secret);
  const refreshToken =
    endpoint === 'token' && singleValue(form.grant_type) === 'refresh_token'
      ? singleValue(form.refresh_token)
      : undefined;
  return { clientId, secret, refreshToken };
}

/**
 * Whether the request proves it comes from the client: its secret (token, introspect, revoke), or
 * a redirect_uri registered for it (authorize: the engine will redirect there, a request anybody can
 * make but not with a made-up redirect_uri).
 */
function provesClient(ctx: Context, endpoint: Endpoint, client: Client, secret: string | undefined): boolean {
  if (endpoint === 'authorize') {
    const redirectUri = singleValue(ctx.query.redirect_uri);
    return redirectUri !== undefined && client.redirectUriAllowed(redirectUri);
  }
  return clientSecretIsCorrect(client, secret);
}

/**
 * Whose budget a proven request spends. At token, introspect and revoke the secret (or a live token)
 * makes the client the caller: the client's own budget. At authorize the caller is a user's browser, and
 * a registered redirect URI proves only that the request names the client correctly: the URI is public
 * (every authorize URL carries it). Counted per client alone, anyone could spend a client's 30 a minute
 * and lock all its users out, so each address has the client's budget of its own.
 */
function clientBudgetKey(endpoint: Endpoint, client: Client, addressBlock: string): string {
  return endpoint === 'authorize' ? unprovenKey(client, addressBlock) : client.clientId;
}

/** Per address block (RequestInfo.addressBlock): an IPv6 caller has its /64's budget, not 2^64 of them. */
function unprovenKey(client: Client | undefined, addressBlock: string): string {
  return JSON.stringify([client?.clientId ?? null, addressBlock]);
}

function singleValue(value: string | string[] | undefined): string | undefined {
  const single = Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
  return single ? single : undefined;
}

/**
 * The urlencoded body, read and put back into the request stream so the engine parses the body exactly
 * as it would have (no "already parsed body" fallback), and parsed here as the engine parses it
 * (lib/shared/selective_body.js): as UTF-8 by node's querystring, which keeps the first 1,000
 * parameters. Parsed another way (URLSearchParams keeps them all), a client_id given again past the
 * 1,000th parameter made the request name no client here and one to the engine, which then issued
 * the client a token that no client's budget counted. Undefined for another type or a body above the
 * engine's limit (it refuses those itself).
 */
async function formBody(ctx: Context): Promise<ParsedUrlQuery | undefined> {
  if (!ctx.is('application/x-www-form-urlencoded')) return undefined;
  const declared = ctx.request.length;
  if (declared !== undefined && (declared === 0 || declared > bodyLimit)) return undefined;
  const body = await peekRequestBody(ctx.req, bodyLimit);
  return body ? querystring.parse(body.toString('utf8')) : undefined;
}

/** A client_id longer than the spec allows or outside RFC 6749's characters names no client. */
function refuseClientId(ctx: Context, endpoint: Endpoint, issuer: string): void {
  const description = 'client_id is not a valid client identifier';
  ctx.set('Cache-Control', 'no-store');
  if (endpoint === 'authorize') {
    renderPage(ctx, 'error', { error: 'invalid_client', description }, 400);
    return;
  }
  if (ctx.get('authorization')) ctx.set('WWW-Authenticate', `Basic realm="${issuer}"`);
  ctx.status = 401;
  ctx.body = { error: 'invalid_client', error_description: description };
}

function answerTooManyRequests(
  ctx: Context,
  endpoint: Endpoint,
  error: RateLimitExceeded,
  who: string,
): void {
  const description = `too many requests for ${who}; retry after ${error.retryAfterSeconds} seconds`;
  ctx.set('Retry-After', String(error.retryAfterSeconds));
  ctx.set('Cache-Control', 'no-store');
  if (endpoint === 'authorize') {
    renderPage(ctx, 'error', { error: 'temporarily_unavailable', description }, 429);
  } else {
    ctx.status = 429;
    ctx.body = { error: 'temporarily_unavailable', error_description: description };
  }
}
