import { stringifySetCookie } from 'cookie';
import type { Context } from 'koa';
import { publicPath } from '../../http/base-path.js';
import { currentSettings } from '../../http/request-settings.js';

/** The main-auth refresh token cookie (spec: httpOnly, secure, sameSite strict); its name per service. */
export const refreshCookieName = () => currentSettings().cookies.refreshToken;

/**
 * The cookie is scoped to the only two endpoints that read it, so no other request carries it: one
 * cookie per path (a cookie has one Path), set and cleared together.
 */
export const refreshCookiePaths = (apiPrefix: string) => [
  `${apiPrefix}/auth/refresh`,
  `${apiPrefix}/auth/logout`,
];

/**
 * The Set-Cookie headers are written with the `cookie` library rather than koa's `ctx.cookies`, on
 * purpose: koa refuses to send a Secure cookie when it believes the connection is plain HTTP, and it
 * never writes Max-Age (the spec clears with maxAge 0). Secure is always set, as the spec requires:
 * browsers accept Secure cookies from https origins and from http://localhost / 127.0.0.1 (secure
 * contexts), which covers production behind TLS and local development; a deployment serving plain
 * http on another host gets no refresh cookie back, which fails visibly instead of weakening it.
 */
const attributes = { httpOnly: true, secure: true, sameSite: 'strict' } as const;

export function setRefreshCookie(
  ctx: Context,
  apiPrefix: string,
  value: string,
  expiresAt: Date,
  now: Date,
): void {
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000));
  for (const path of refreshCookiePaths(apiPrefix)) {
    ctx.append(
      'Set-Cookie',
      stringifySetCookie(refreshCookieName(), value, {
        ...attributes,
        path: publicPath(ctx, path),
        maxAge,
        expires: expiresAt,
      }),
    );
  }
}

/** Clears the cookie on both paths: empty value, Max-Age=0 and an expiry in the past. */
export function clearRefreshCookie(ctx: Context, apiPrefix: string): void {
  for (const path of refreshCookiePaths(apiPrefix)) {
    ctx.append(
      'Set-Cookie',
      stringifySetCookie(refreshCookieName(), '', {
        ...attributes,
        path: publicPath(ctx, path),
        maxAge: 0,
        expires: new Date(0),
      }),
    );
  }
}

export function readRefreshCookie(ctx: Context): string | undefined {
  return ctx.cookies.get(refreshCookieName(), { signed: false }) || undefined;
}
