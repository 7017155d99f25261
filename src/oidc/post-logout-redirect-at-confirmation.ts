import type { Context } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Database } from '../db/database.js';
import { readEngineSessionId } from './engine-session-cookie.js';

/**
 * RP-initiated logout checks post_logout_redirect_uri when the logout is asked for
 * (GET /oauth/end_session), keeps it in the engine session's state, and sends the browser there with
 * the RP's state once the logout is confirmed (POST /oauth/end_session/confirm), without checking it
 * again. An administrator who took the URI from the client in between (a lapsed domain, an attacker's
 * address) would still see the browser sent there. Read before the engine's confirmation: the URI the
 * browser's session keeps (the session row the engine is about to read and destroy).
 */
export async function postLogoutRedirectUriKept(ctx: Context, db: Database): Promise<string | undefined> {
  const sessionId = readEngineSessionId(ctx);
  if (!sessionId) return undefined;
  const row: { payload?: { state?: { postLogoutRedirectUri?: unknown } } } | undefined = await db(
    'oidc_payloads',
  )
    .where({ model: 'Session', id: sessionId })
    .first('payload');
  const uri = row?.payload?.state?.postLogoutRedirectUri;
  return typeof uri === 'string' ? uri : undefined;
}

/**
 * After the engine's confirmation (the logout done): when it redirected to a kept URI that the
 * client no longer has, the browser goes to the signed-out page instead, as after a logout that named
 * no URI. The logout itself stands.
 */
export function keepPostLogoutRedirectRegistered(ctx: Context, keptUri: string | undefined): void {
  if (keptUri === undefined || ctx.status < 300 || ctx.status >= 400) return;
  const oidc = (ctx as unknown as { oidc?: KoaContextWithOIDC['oidc'] }).oidc;
  const client = oidc?.client;
  if (!oidc || (client && client.postLogoutRedirectUriAllowed(keptUri))) return;
  ctx.status = 303;
  ctx.redirect(oidc.urlFor('end_session_success'));
}
