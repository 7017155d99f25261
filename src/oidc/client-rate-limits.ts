import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import { renderPage } from '../http/pages.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../http/rate-limit.js';
import { parseBasicCredentials } from './client-authentication.js';
import { oauthRoutes } from './provider.js';

/** Spec, Limits: per client_id (not per IP), 60-second windows. */
export const clientRateLimits = {
  token: { name: 'oauth-token', points: 20, durationSeconds: 60 },
  introspect: { name: 'oauth-introspect', points: 100, durationSeconds: 60 },
  revoke: { name: 'oauth-revoke', points: 30, durationSeconds: 60 },
  authorize: { name: 'oauth-authorize', points: 30, durationSeconds: 60 },
} satisfies Record<string, RateLimitRule>;

const postRules = new Map<string, RateLimitRule>([
  [oauthRoutes.token, clientRateLimits.token],
  [oauthRoutes.introspection, clientRateLimits.introspect],
  [oauthRoutes.revocation, clientRateLimits.revoke],
]);

/** The engine reads request bodies itself, up to this size. */
const bodyLimit = 56 * 1024;

/**
 * Rate limits of the OAuth endpoints, keyed by client_id, in front of the engine (whose ctx.oidc does
 * not exist yet at this point). The client_id comes from HTTP Basic, the query (authorize) or the form
 * body. The budget lives in the shared database store, so all nodes draw from it.
 *
 * Exceeding answers 429 with Retry-After: `temporarily_unavailable` (RFC 6749's code for a server that
 * can't take the request now) as JSON, or an error page for the browser-facing authorize endpoint.
 */
export function clientRateLimiting(rateLimits: RateLimits): Middleware {
  return async function limitPerClient(ctx, next) {
    const rule =
      ctx.method === 'POST'
        ? postRules.get(ctx.path)
        : ctx.method === 'GET' && ctx.path === oauthRoutes.authorization
          ? clientRateLimits.authorize
          : undefined;
    if (!rule) return next();
    const clientId =
      parseBasicCredentials(ctx.get('authorization'))?.clientId ??
      (rule === clientRateLimits.authorize ? queryClientId(ctx) : await bodyClientId(ctx));
    // No client_id: the engine refuses the request anyway; nothing to count it against.
    if (!clientId) return next();
    try {
      await rateLimits.consume(rule, clientId);
    } catch (error) {
      if (!(error instanceof RateLimitExceeded)) throw error;
      const description = `too many requests for this client; retry after ${error.retryAfterSeconds} seconds`;
      ctx.set('Retry-After', String(error.retryAfterSeconds));
      ctx.set('Cache-Control', 'no-store');
      if (rule === clientRateLimits.authorize) {
        renderPage(ctx, 'error', { error: 'temporarily_unavailable', description }, 429);
      } else {
        ctx.status = 429;
        ctx.body = { error: 'temporarily_unavailable', error_description: description };
      }
      return;
    }
    await next();
  };
}

function queryClientId(ctx: Context): string | undefined {
  const value = ctx.query.client_id;
  return typeof value === 'string' && value ? value : undefined;
}

/**
 * Reads client_id from a urlencoded body and puts the bytes back into the request stream, so the
 * engine parses the body exactly as it would have (no "already parsed body" fallback).
 */
async function bodyClientId(ctx: Context): Promise<string | undefined> {
  const length = Number(ctx.get('content-length'));
  if (
    !ctx.is('application/x-www-form-urlencoded') ||
    !Number.isInteger(length) ||
    length <= 0 ||
    length > bodyLimit
  ) {
    return undefined;
  }
  const body = await peekBody(ctx.req, length);
  if (!body) return undefined;
  const value = new URLSearchParams(body.toString('utf8')).getAll('client_id');
  return value.length === 1 && value[0] ? value[0] : undefined;
}

async function peekBody(request: IncomingMessage, length: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of request.iterator({ destroyOnReturn: false })) {
    chunks.push(chunk as Buffer);
    received += (chunk as Buffer).length;
    if (received >= length) break;
  }
  const body = Buffer.concat(chunks);
  // A body cut short ended the stream; the engine then reports the size mismatch itself.
  if (!request.readableEnded) request.unshift(body);
  return received === length ? body : undefined;
}
