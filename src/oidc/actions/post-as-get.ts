import type { Context } from 'koa';
import { publicPath } from '../../http/base-path.js';
import { readFormBody } from '../../http/form-body.js';

/**
 * The form of a POST request sent on by GET stays under Node's 16 KB limit for a request line and its
 * headers (src/http/http-server.ts), cookies included.
 */
const formLimitBytes = 8 * 1024;

/**
 * POST to the authorization endpoint (OpenID Connect Core §3.1.2.1) and to the logout endpoint
 * (RP-Initiated Logout 1.0 §2), which both MUST accept the request form-serialized as well as by GET.
 *
 * The engine serves both by GET only: since its v9 its POST handling needs the session cookie to be
 * SameSite=None, because a cross-site POST carries no SameSite=Lax cookie and the engine would not
 * see who is signed in. We answer the POST with 303 See Other to the same endpoint, its form as the
 * query. The browser follows with a top-level GET, which carries the Lax cookie, and the engine
 * handles the request as if the client had sent it by GET: the same checks, errors and answers.
 * Parameters are the form's (§13.2: a POST request is form-serialized); a repeated one is refused
 * with 400, as the engine refuses it in a query.
 */
export async function sendPostAsGet(ctx: Context): Promise<void> {
  const form = await readFormBody(ctx, formLimitBytes);
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(form)) query.set(name, value ?? '');
  ctx.status = 303;
  ctx.set('Cache-Control', 'no-store');
  ctx.redirect(`${publicPath(ctx, ctx.path)}?${query.toString()}`);
}
