import type { Context, Middleware } from 'koa';
import { databaseRetryAfterSeconds, isDatabaseUnavailable } from '../db/database-unavailable.js';
import { ApiError } from '../http/api-error.js';
import { logFailure, type ErrorAnswer } from '../http/error-handler.js';
import type { Logger } from '../logger.js';

/**
 * An RFC 6749 §5.2 / RFC 6750 §3 error, for the OAuth endpoints we serve ourselves (userinfo,
 * introspection): `{ "error": "...", "error_description": "..." }` with the right status.
 */
export class OAuthError extends Error {
  override name = 'OAuthError';

  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}

/**
 * The database is away: RFC 6749's `temporarily_unavailable` (its code for a server that can't take
 * the request now) with 503 and Retry-After.
 */
export const temporarilyUnavailable = () =>
  new OAuthError(
    503,
    'temporarily_unavailable',
    `the service is briefly unavailable; retry after ${databaseRetryAfterSeconds} seconds`,
    { 'Retry-After': String(databaseRetryAfterSeconds) },
  );

export function oauthErrors(logger: Logger): Middleware {
  const answer = oauthErrorAnswer(logger);
  return async function oauthErrorHandler(ctx, next) {
    try {
      await next();
    } catch (caught) {
      answer(ctx, caught);
    }
  };
}

export function oauthErrorAnswer(logger: Logger): ErrorAnswer {
  return (ctx, caught) => {
    const error = toOAuthError(caught);
    logFailure(logger, ctx, caught, error.status);
    writeOAuthError(ctx, error);
  };
}

export function writeOAuthError(ctx: Context, error: OAuthError): void {
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: error.error, error_description: error.description };
}

/** RFC 6750 §3: the WWW-Authenticate challenge of a bearer-protected resource. */
export function bearerChallenge(realm: string, error?: string, description?: string): Record<string, string> {
  const parts = [`realm="${realm}"`];
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description.replace(/"/g, "'")}"`);
  return { 'WWW-Authenticate': `Bearer ${parts.join(', ')}` };
}

function toOAuthError(caught: unknown): OAuthError {
  if (caught instanceof OAuthError) return caught;
  if (isDatabaseUnavailable(caught)) return temporarilyUnavailable();
  // Ours refusing the request for now (too many requests held at once): RFC 6749's code for it.
  if (caught instanceof ApiError && caught.status === 503) {
    return new OAuthError(503, 'temporarily_unavailable', caught.message, caught.headers);
  }
  // Ours in the JSON API shape (an unknown method, say): RFC 6749 has one code for a client's mistake.
  if (caught instanceof ApiError && caught.status < 500) {
    return new OAuthError(caught.status, 'invalid_request', caught.message, caught.headers);
  }
  const { status, expose } = (caught ?? {}) as { status?: unknown; expose?: unknown };
  // Body parser errors: malformed or oversized bodies (413, still RFC 6749's invalid_request).
  if (typeof status === 'number' && status >= 400 && status < 500 && expose) {
    return new OAuthError(status === 413 ? 413 : 400, 'invalid_request', (caught as Error).message);
  }
  return new OAuthError(500, 'server_error', 'unexpected error');
}
