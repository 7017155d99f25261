import type { Context } from 'koa';

/** 127.0.0.0/8 (also IPv4-mapped, as a dual-stack socket reports it) and ::1. */
export function isLoopbackAddress(address: string): boolean {
  return address === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(address);
}

/**
 * Whether a request was made on this machine: its TCP peer is a loopback address (the socket's, never
 * what a header claims), and no proxy relayed it. A reverse proxy on the same machine is a loopback
 * peer whoever is behind it, so a request carrying a forwarding header is not taken as local.
 */
export function isFromThisMachine(ctx: Context): boolean {
  const peer = ctx.req.socket.remoteAddress;
  if (!peer || !isLoopbackAddress(peer)) return false;
  return !ctx.get('forwarded') && !ctx.get('x-forwarded-for') && !ctx.get('x-real-ip');
}
