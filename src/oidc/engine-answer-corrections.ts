import type { Context, Middleware } from 'koa';
import type { KoaContextWithOIDC, Provider } from 'oidc-provider';
import { isDatabaseUnavailable } from '../db/database-unavailable.js';
import { payloadTooLarge } from '../http/api-error.js';
import { renderErrorPage } from '../http/error-handler.js';
import { OAuthError, temporarilyUnavailable, writeOAuthError } from './oauth-error.js';
import { oauthRoutes } from './provider.js';

/**
 * Answers of the engine that differ from what RFC 6749 and the spec ask; this corrects them on the way
 * out (the engine has no option for any of them):
 *
 * - token: a grant type the client may not use is `unauthorized_client` (RFC 6749 §5.2), not
 *   `invalid_request`; tokens are sent with `Pragma: no-cache` too (§5.1);
 * - token and revoke: a request that names no client at all, or whose Authorization header is no
 *   usable HTTP Basic credential (`Basic Og==`, no secret, another scheme), is 401 `invalid_client`
 *   ("no client authentication included"; a client that tried the header gets 401 and a challenge,
 *   RFC 6749 §5.2), not 400 `invalid_request`;
 * - revoke: an access token (a JWT) "cannot be revoked directly; always answers 200" (spec), where the
 *   engine answers `unsupported_token_type`. Client authentication has already succeeded by then;
 * - a request body over the engine's limit (56 KiB, lib/shared/selective_body.js) is, for the
 *   engine, a body it failed to parse: 400. It is 413 here, refused before the engine reads it (by
 *   its Content-Length; a chunked body that long still gets the engine's 400);
 * - the database being away is, for the engine, an error like any other: a 500 `server_error`. Its
 *   JSON answers become 503 `temporarily_unavailable` with Retry-After, like ours. The engine only
 *   tells which error it was through its 'server_error' event, so the requests whose error was the
 *   database's are noted there. (Its HTML answers go through renderError, which sees the error.)
 */
const engineBodyLimit = 56 * 1024;

/** The engine's invalid_request descriptions that mean "the client did not authenticate". */
const failedClientAuthentication = new Set([
  'no client authentication mechanism provided',
  'invalid authorization header value format',
  'client_id and client_secret in the authorization header are not properly encoded',
  'client_secret must be provided in the Authorization header',
]);

export function engineAnswerCorrections(provider: Provider): Middleware {
  const lostDatabase = new WeakSet<Context>();
  provider.on('server_error', (ctx: KoaContextWithOIDC, error: unknown) => {
    if (isDatabaseUnavailable(error)) lostDatabase.add(ctx as unknown as Context);
  });

  return async function correctEngineAnswers(ctx, next) {
    if ((ctx.request.length ?? 0) > engineBodyLimit) {
      // The engine's own choice between its JSON and its HTML answers.
      if (ctx.accepts('json', 'html') === 'html') renderErrorPage(ctx, payloadTooLarge());
      else writeOAuthError(ctx, new OAuthError(413, 'invalid_request', 'the request body is too large'));
      return;
    }
    await next();
    // RFC 6749 §5.1: a response with tokens MUST carry Cache-Control: no-store and Pragma: no-cache;
    // the engine sends the first only (HTTP/1.0 caches read the second).
    if (ctx.path === oauthRoutes.token && ctx.status === 200) ctx.set('Pragma', 'no-cache');
    if (ctx.status === 500 && lostDatabase.has(ctx) && ctx.response.is('json')) {
      writeOAuthError(ctx, temporarilyUnavailable());
      return;
    }
    if (ctx.status !== 400 || ctx.method !== 'POST') return;
    const body = ctx.body as { error?: string; error_description?: string } | undefined;
    if (
      (ctx.path === oauthRoutes.token || ctx.path === oauthRoutes.revocation) &&
      body?.error === 'invalid_request' &&
      failedClientAuthentication.has(body.error_description ?? '')
    ) {
      ctx.status = 401;
      body.error = 'invalid_client';
      if (ctx.get('authorization')) ctx.set('WWW-Authenticate', `Basic realm="${provider.issuer}"`);
    } else if (
      ctx.path === oauthRoutes.token &&
      body?.error === 'invalid_request' &&
      body.error_description === 'requested grant type is not allowed for this client'
    ) {
      body.error = 'unauthorized_client';
    } else if (ctx.path === oauthRoutes.revocation && body?.error === 'unsupported_token_type') {
      ctx.status = 200;
      ctx.body = '';
    }
  };
}
