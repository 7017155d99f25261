import Router from '@koa/router';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { basePath, publicPath } from '../http/base-path.js';
import { renderPage } from '../http/pages.js';
import { pageLanguage } from '../i18n/page-language.js';
import type { LogoutState } from './actions/end-session.js';

const languagePattern = /^[a-z]{2}(-[A-Za-z]{2,4})?$/;

export function singleLogoutPath(lang: string): string {
  return `/${languagePattern.test(lang) ? lang : 'en'}/auth/single-logout`;
}

/**
 * The engine's logout step (features.rpInitiatedLogout.logoutSource): instead of its confirmation
 * form, send the browser to /:lang/auth/single-logout. The form's one-time xsrf value travels in the
 * URL fragment, which never reaches a server log or a Referer header; the page's script posts it to
 * /oauth/end_session/confirm by itself (a spinner meanwhile), or after a click when the request came
 * without an id_token_hint of the account signed in to this browser.
 */
export async function logoutSource(ctx: KoaContextWithOIDC, form: string): Promise<void> {
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(form)?.[1];
  if (!xsrf) throw new Error('the engine logout form has no xsrf field');
  const uiLocales = ctx.oidc.params?.ui_locales;
  const lang = pageLanguage(ctx as never, {
    uiLocales: typeof uiLocales === 'string' ? uiLocales : undefined,
  });
  // Only an ID token of the person signed in here skips the question (RP-Initiated Logout 1.0 §2: the
  // OP MUST ask when it "does not belong to the current OP session"): anyone holds an ID token of
  // their own account, and a link with it would otherwise sign whoever opens it out of everything.
  const hint = (ctx.state as LogoutState).logoutHint;
  const confirm = hint === undefined || hint.userId !== ctx.oidc.session?.accountId;
  const fragment = new URLSearchParams({ xsrf, ...(confirm ? { confirm: '1' } : {}) });
  // Without script the fragment is out of reach: the page's no-script form reads the value from this
  // short-lived cookie instead (httpOnly, this browser only), so the logout finishes with a click.
  ctx.cookies.set(logoutXsrfCookie, xsrf, {
    httpOnly: true,
    sameSite: 'lax',
    signed: true,
    path: basePath(ctx) || '/',
    maxAge: 10 * 60 * 1000,
  });
  ctx.status = 303;
  ctx.redirect(`${publicPath(ctx, singleLogoutPath(lang))}#${fragment}`);
}

const logoutXsrfCookie = 'logout_xsrf';

/** After a logout without a post_logout_redirect_uri. */
export async function postLogoutSuccessSource(ctx: KoaContextWithOIDC): Promise<void> {
  renderPage(ctx as never, 'signed-out', { clientName: ctx.oidc.client?.clientName });
}

/** GET /:lang/auth/single-logout: the page itself (static; its script reads the fragment). */
export function singleLogoutPageRoutes(): Router {
  const router = new Router();
  router.get('/:lang/auth/single-logout', (ctx) => {
    if (!languagePattern.test(ctx.params.lang!)) return;
    const xsrf = ctx.cookies.get(logoutXsrfCookie, { signed: true });
    renderPage(ctx, 'single-logout', { xsrf });
  });
  return router;
}
