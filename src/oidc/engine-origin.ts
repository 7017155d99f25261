import type { Middleware } from 'koa';

/**
 * The engine writes the addresses it hands out (the resume address of an authorization, the form of
 * the logout confirmation, the audiences it accepts in client assertions, discovery's endpoints) from
 * the request's own address: `ctx.href`, i.e. the Host header (behind TRUST_PROXY, X-Forwarded-Host and
 * -Proto), or the request target when a client sends it in absolute form (`GET http://host/path`).
 * Those are the caller's to write. A Host that is no host (`a b`, `[`, a port past 65535) made
 * `new URL()` throw inside the engine: 500 at authorize and at logout, for anyone sending one. A
 * forged one put another site in the logout form's action, its one-time xsrf value with it.
 *
 * The service has one public address, its issuer: every request the engine answers reads its own
 * address as the issuer's origin and the path it was sent to. The request's headers are left as they
 * came (the pages, the cookies and the logs read them).
 */
export function engineAtTheIssuer(issuer: string): Middleware {
  const origin = new URL(issuer).origin;
  return (ctx, next) => {
    const target = ctx.originalUrl.startsWith('/') ? ctx.originalUrl : '/';
    Object.defineProperties(ctx.request, {
      origin: { value: origin, configurable: true },
      href: { value: `${origin}${target}`, configurable: true },
    });
    return next();
  };
}
