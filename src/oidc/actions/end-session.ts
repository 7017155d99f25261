import Router from '@koa/router';
import type { Context } from 'koa';
import { basePath } from '../../http/base-path.js';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { findDeviceBinding, readDeviceCookie } from '../../identity/sessions/device-bindings.js';
import { clearRefreshCookie } from '../../identity/sessions/refresh-cookie.js';
import { revokeDeviceSessions } from '../../identity/sessions/sessions.js';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { renderPage } from '../../http/pages.js';
import { sendPostAsGet } from './post-as-get.js';
import type { PublishedKeySet } from '../../keys/published-key-set.js';
import { verifyIdTokenHint, type IdTokenHint } from '../../tokens/id-token-hint.js';
import { grantIdsNamedBy } from '../models/engine-sessions.js';
import { revokeRefreshTokensOf } from '../models/oauth-refresh-token.js';
import {
  accountOfEngineSessionId,
  endBrowserSignInOf,
  endEarlierSignInsOfBrowser,
  revokeGrantsOfEngineSession,
} from '../models/user-sign-ins.js';
import { readEngineSessionId } from '../engine-session-cookie.js';
import {
  keepPostLogoutRedirectRegistered,
  postLogoutRedirectUriKept,
} from '../post-logout-redirect-at-confirmation.js';
import { oauthRoutes } from '../provider.js';

/** What the logout pages need to know about the request (kept in ctx.state). */
export interface LogoutState {
  logoutHint?: IdTokenHint;
}

/**
 * GET /oauth/end_session, in front of the engine's RP-initiated logout:
 *
 * 1. the id_token_hint is verified here against the published key set, so a hint signed by a key
 *    replaced in the last 24 hours still works (the engine only knows the current key); an invalid
 *    hint is an error page, never a redirect. The engine then gets `client_id` instead, and checks the
 *    post_logout_redirect_uri against the client's list and ends the browser session.
 * 2. with a valid hint, all OAuth refresh tokens of that user and client are revoked (offline ones
 *    too, which the engine's logout leaves alone).
 *
 * Without a hint the logout page asks the user to confirm (ASVS 10.6.2: no forced logout by a third party).
 */
export function endSessionRoutes(deps: {
  db: Database;
  clock: Clock;
  keySet: PublishedKeySet;
  issuer: string;
  /** The identity API's prefix: the paths of the main-auth refresh cookie. */
  apiPrefix: string;
}): Router {
  const router = new Router();
  // The logout request by POST: sent on as a GET (post-as-get.ts).
  router.post(oauthRoutes.end_session, sendPostAsGet);
  router.get(oauthRoutes.end_session, async (ctx, next) => {
    const hint = typeof ctx.query.id_token_hint === 'string' ? ctx.query.id_token_hint : undefined;
    if (hint !== undefined) {
      const verified = await verifyIdTokenHint(hint, deps.keySet, deps.issuer);
      const clientId = ctx.query.client_id;
      if (!verified || (clientId !== undefined && clientId !== verified.clientId)) {
        renderPage(
          ctx,
          'error',
          { error: 'invalid_request', description: 'The id_token_hint is not valid.' },
          400,
        );
        return;
      }
      const { id_token_hint: _verified, ...rest } = ctx.query;
      ctx.query = { ...rest, client_id: verified.clientId };
      (ctx.state as LogoutState).logoutHint = verified;
    }
    const browserSessionId = readEngineSessionId(ctx);
    await next();
    rememberBrowserSessionId(ctx, browserSessionId);
    const verified = (ctx.state as LogoutState).logoutHint;
    if (verified && ctx.status < 400) {
      // In one transaction: the inbound SSO sessions made from these grants end with them, or none does.
      await deps.db.transaction((trx) =>
        revokeRefreshTokensOf(trx, verified.userId, verified.clientId, deps.clock.now()),
      );
    }
  });
  /**
   * The logout confirmed (with script or without, the same form post): the grants issued in the
   * engine's session are revoked, the main-auth sessions of the same account in this browser (its
   * device binding) end too, and the refresh cookie is cleared, so the applications and the service's
   * own pages are signed out as well as the engine's session.
   */
  router.post(`${oauthRoutes.end_session}/confirm`, async (ctx, next) => {
    // The post-logout URI is checked again against the client as it is now (it may have been removed).
    const keptUri = await postLogoutRedirectUriKept(ctx, deps.db);
    await next();
    keepPostLogoutRedirectRegistered(ctx, keptUri);
    const oidc = (ctx as unknown as { oidc?: KoaContextWithOIDC['oidc'] }).oidc;
    const session = oidc?.session;
    if (!session || !oidc?.params?.logout || ctx.status >= 400) return;
    const now = deps.clock.now();
    let accountId = session.accountId;
    if (accountId) {
      const signedIn = accountId;
      // The engine keeps the grants of the session it ended (every authorization persists logout, for
      // offline access): revoked here, so an application's refresh token obtained in this browser dies
      // with the sign-in, as at the service's own logout.
      // In one transaction, with the inbound SSO sessions made from them (endSessionsFromGrants).
      // So does the session this browser held before, should a copy of its cookie still hold it.
      await deps.db.transaction(async (trx) => {
        await revokeGrantsOfEngineSession(
          trx,
          signedIn,
          {
            uid: session.uid,
            grantIds: grantIdsNamedBy(session),
          },
          now,
        );
        await endEarlierSignInsOfBrowser(trx, signedIn, session.uid, now);
      });
    } else {
      // The engine found no session under this browser's id: the one that id stands for now, renamed
      // in a copy of the cookie (rememberBrowserSessionId), ends here with its grants (endBrowserSignInOf).
      const browserSessionId = takeBrowserSessionId(ctx);
      if (browserSessionId === undefined) return;
      const owner = await accountOfEngineSessionId(deps.db, browserSessionId);
      if (owner === undefined) return;
      const ended = await deps.db.transaction((trx) => endBrowserSignInOf(trx, owner, browserSessionId, now));
      if (!ended) return;
      accountId = owner;
    }
    const device = await findDeviceBinding(deps.db, readDeviceCookie(ctx));
    if (device) {
      await revokeDeviceSessions(deps.db, accountId, device, 'logout', now);
    }
    clearRefreshCookie(ctx, deps.apiPrefix);
  });
  return router;
}

/** The engine session id this browser held when its logout began (rememberBrowserSessionId). */
const browserSessionCookie = 'logout_browser_session';

/**
 * The engine found no session under the id this browser's cookie holds, and made an empty one for the
 * logout (its cookie now names that one): the id may still stand for a live session, renamed in a copy
 * of the cookie that went back through the sign-in pages (a thief's, liveEngineSessionNamedBy). Kept
 * for the confirmation in a signed, httpOnly cookie of this browser, from this browser's own signed
 * engine cookie only, so the confirmed logout ends that session too.
 */
function rememberBrowserSessionId(ctx: Context, browserSessionId: string | undefined): void {
  const session = (ctx as unknown as { oidc?: KoaContextWithOIDC['oidc'] }).oidc?.session;
  const sessionId = (session as unknown as { id?: string } | undefined)?.id;
  if (!session || session.accountId || !browserSessionId || browserSessionId === sessionId) return;
  ctx.cookies.set(browserSessionCookie, browserSessionId, {
    httpOnly: true,
    sameSite: 'lax',
    signed: true,
    path: basePath(ctx) || '/',
    maxAge: 10 * 60 * 1000,
  });
}

/** The id rememberBrowserSessionId kept, once: its cookie is cleared. */
function takeBrowserSessionId(ctx: Context): string | undefined {
  const browserSessionId = ctx.cookies.get(browserSessionCookie, { signed: true }) || undefined;
  if (browserSessionId !== undefined) {
    ctx.cookies.set(browserSessionCookie, null, { signed: true, path: basePath(ctx) || '/' });
  }
  return browserSessionId;
}
