import type { Context } from 'koa';
import { ApiError } from './api-error.js';

/**
 * After every router and the engine (the request envelope asks): a request nothing answered (no
 * body, and 404, or 405 where a router knew the path but not the method) gets its error in the
 * endpoint's shape, not Koa's plain "Not Found" / "Method Not Allowed". A path that exists with other
 * methods is 405 with `Allow` (RFC 9110 §15.5.6): the routers' own, or `methodsByPath` for the
 * engine's endpoints, whose router answers an unknown method as an unknown path.
 */
export function unansweredError(
  ctx: Context,
  methodsByPath: ReadonlyMap<string, readonly string[]>,
): ApiError | undefined {
  if (ctx.body != null || ctx.headerSent || (ctx.status !== 404 && ctx.status !== 405)) return undefined;
  const allowed = methodsByPath.get(ctx.path)?.join(', ') ?? ctx.response.get('Allow');
  return allowed && !allowed.split(/,\s*/).includes(ctx.method)
    ? methodNotAllowed(ctx, allowed)
    : noSuchPath();
}

export const noSuchPath = () => new ApiError(404, 'not_found', 'There is no such page or endpoint.');

/** 405 with the methods the path takes (`allowed`, as the Allow header lists them). */
export function methodNotAllowed(ctx: Context, allowed: string): ApiError {
  return new ApiError(
    405,
    'method_not_allowed',
    `${ctx.path} takes ${allowed}, not ${ctx.method}.`,
    undefined,
    {
      Allow: allowed,
    },
  );
}
