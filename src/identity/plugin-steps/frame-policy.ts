import type { Context } from 'koa';

/**
 * A page that embeds plugin frames lets exactly their origins in (`frame-src`), extending the policy
 * security-headers.ts set for the answer; every other page keeps its default (frames from nowhere
 * else). Origins come from the steps' own configuration, never from the request.
 */
export function allowPluginFrames(ctx: Context, screens: { data?: Record<string, unknown> }[]): void {
  const origins = screens
    .map((screen) => (screen.data?.frame as { origin?: unknown } | undefined)?.origin)
    .filter(
      (origin): origin is string => typeof origin === 'string' && /^https?:\/\/[^\s;,']+$/.test(origin),
    );
  if (origins.length === 0) return;
  const policy = ctx.response.get('Content-Security-Policy');
  ctx.set('Content-Security-Policy', `${policy}; frame-src ${[...new Set(origins)].join(' ')}`);
}
