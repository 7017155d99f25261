import type { Context } from 'koa';
import { randomSecret, sha256 } from '../crypto/digest.js';
import { publicPath } from '../http/base-path.js';

const cookieName = 'auth_browser';

/**
 * The browser a sign-in page's flow belongs to (login CSRF): a random value in an httpOnly, SameSite=Lax
 * cookie, set by the page that starts a flow; the flow keeps its SHA-256 (FlowContext.browser) and goes
 * on only where the cookie is presented again. Without it, anyone could take a sign-in of their own
 * (on the pages or through the API) to its last step and have a visitor's browser post that step from a
 * page of theirs, signing the visitor in to the attacker's account. One value per browser session, so
 * two tabs each run their own flow.
 */
export const flowBrowser = {
  /** This browser's value, set now if it has none. */
  ensure(ctx: Context): string {
    let value = ctx.cookies.get(cookieName, { signed: false });
    if (!value) {
      value = randomSecret(32);
      ctx.cookies.set(cookieName, value, {
        httpOnly: true,
        sameSite: 'lax',
        overwrite: true,
        path: publicPath(ctx, '/'),
      });
    }
    return sha256(value);
  },
  /** What this request's browser presents: matches only the flows it started (none without the cookie). */
  of(ctx: Context): string {
    const value = ctx.cookies.get(cookieName, { signed: false });
    return value ? sha256(value) : 'none';
  },
};
