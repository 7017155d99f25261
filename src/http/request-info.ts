import type { Context } from 'koa';
import type { RequestInfo } from '../identity/auth-flow/step.js';

/** The caller's IP (X-Forwarded-For only when TRUST_PROXY is set) and user agent. */
export function requestInfo(ctx: Context): RequestInfo {
  return { ip: ctx.ip, userAgent: (ctx.get('user-agent') || '').slice(0, 512) };
}
