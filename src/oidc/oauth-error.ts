import type { Middleware } from 'koa';
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

export function oauthErrors(logger: Logger): Middleware {
  return async function oauthErrorHandler(ctx, next) {
    try {
      await next();
    } catch (caught) {
      const error = toOAuthError(caught);
      if (error.status >= 500) logger.error({ err: caught, path: ctx.path }, 'oauth request failed');
      ctx.status = error.status;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { error: error.error, error_description: error.description };
    }
  };
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
  const { status, expose } = caught as { status?: unknown; expose?: unknown };
  // Body parser errors: malformed or oversized bodies.
  if (typeof status === 'number' && status >= 400 && status < 500 && expose) {
    return new OAuthError(400, 'invalid_request', (caught as Error).message);
  }
  return new OAuthError(500, 'server_error', 'unexpected error');
}
