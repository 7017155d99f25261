import net from 'node:net';
import type { Context } from 'koa';

/** Who made a request: what the auth flows and sessions record and the brute-force protection keys on. */
export interface RequestInfo {
  ip: string;
  userAgent: string;
  /**
   * The device-binding cookie the request presented, for the brute-force protection to recognise a
   * device the account signed in on before. A secret: never stored (not part of a flow's context).
   */
  deviceCookie?: string | undefined;
}

/**
 * The caller's IP and user agent. Behind TRUST_PROXY=<hops> proxies, Koa's `ctx.ip` is the address the
 * outermost trusted proxy appended to X-Forwarded-For (`app.maxIpsCount`), never one the caller wrote.
 * What is there must be an IP address (no zone, so at most 45 characters); anything else — a proxy
 * that appends something else, a request that reached us with fewer hops than configured — falls back
 * to the connection's peer address.
 */
export function requestInfo(ctx: Context): RequestInfo {
  return { ip: clientIp(ctx), userAgent: (ctx.get('user-agent') || '').slice(0, 512) };
}

function clientIp(ctx: Context): string {
  const ip = ctx.ip;
  if (net.isIP(ip) !== 0 && !ip.includes('%')) return ip;
  return ctx.req.socket.remoteAddress ?? '';
}
