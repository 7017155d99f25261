import type { Middleware } from 'koa';
import { oauthRoutes } from './provider.js';

/**
 * Two answers of the engine differ from what RFC 6749 and the spec ask; this corrects them on the way
 * out (the engine has no option for either):
 *
 * - token: a grant type the client may not use is `unauthorized_client` (RFC 6749 §5.2), not
 *   `invalid_request`;
 * - revoke: an access token (a JWT) "cannot be revoked directly; always answers 200" (spec), where the
 *   engine answers `unsupported_token_type`. Client authentication has already succeeded by then.
 */
export function engineAnswerCorrections(): Middleware {
  return async function correctEngineAnswers(ctx, next) {
    await next();
    if (ctx.status !== 400 || ctx.method !== 'POST') return;
    const body = ctx.body as { error?: string; error_description?: string } | undefined;
    if (
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
