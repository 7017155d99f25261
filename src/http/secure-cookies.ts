import type { Context, Next } from 'koa';

/**
 * Under an https issuer, every cookie set while answering a request is Secure, however the request
 * reached the service. TLS ends in front of it (docs/security.md), so a request may arrive over plain
 * http: without `TRUST_PROXY`, or from a proxy that sends no `X-Forwarded-Proto`. Koa then read the
 * connection as insecure, and the engine's session cookie (30 days), its interaction cookies and ours
 * were written without Secure: a browser sends such a cookie with any plain-http request to the host,
 * where anyone on the path reads it, and keeps one a forged plain-http answer sets. (The refresh and
 * device cookies are written Secure by hand: refresh-cookie.ts.)
 *
 * Only the cookies are told, not the protocol: the engine builds its redirects from the request's
 * address, which stays as it came. Koa's cookie jar follows `secure`; the engine's, its own, follows
 * `ctx.secure`. A cookie given no `secure` of its own follows its jar.
 */
export function secureCookies(ctx: Context, next: Next): Promise<unknown> {
  ctx.cookies.secure = true;
  Object.defineProperty(ctx, 'secure', { value: true, configurable: true });
  return next();
}
