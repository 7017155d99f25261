import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Context } from 'koa';

/** Who made a request: what the auth flows and sessions record and the brute-force protection keys on. */
export interface RequestInfo {
  /** The client's full address: what records, audit entries, session lists and messages show. */
  ip: string;
  /**
   * What every per-address rate limit and lockout counts: `addressBlock(ip)`, an IPv6 client's /64
   * (it can pick any address in it, RFC 8981).
   */
  addressBlock: string;
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
  return requestFrom(clientIp(ctx), (ctx.get('user-agent') || '').slice(0, 512));
}

/** The RequestInfo of a request from `ip` (e.g. the one a flow recorded when it started). */
export function requestFrom(ip: string, userAgent: string): RequestInfo {
  return { ip, addressBlock: addressBlock(ip), userAgent };
}

function clientIp(ctx: Context): string {
  const ip = ctx.ip;
  if (net.isIP(ip) !== 0 && !ip.includes('%')) return ip;
  return ctx.req.socket.remoteAddress ?? '';
}

/**
 * What per-address bounds count as one client: an IPv4 address, or the /64 an IPv6 address is in.
 * A host picks any address of its /64 at will (SLAAC, RFC 8981 temporary addresses), so counted per
 * address, one client with one IPv6 network has 2^64 shares of every per-address bound.
 */
export function addressBlock(ip: string): string {
  // Every request's: the short IPv4 pattern first (most addresses), then Node's long IPv6 one.
  if (net.isIPv4(ip) || !net.isIPv6(ip)) return ip;
  const address = ipaddr.IPv6.parse(ip);
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().toString();
  return `${address.parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
