import type { Context, Middleware, Next } from 'koa';

/**
 * Runs `stack` for the requests under `prefix` (the issuer's path, '' for none), with the prefix
 * stripped from `ctx.path` and kept in `ctx.mountPath` (as koa-mount does), so routes stay written
 * from the root and every URL the service writes goes through `publicPath`. `owns` says which of the
 * remaining paths are the service's; the others go to `next` (the host's routes). A host that already
 * mounted the service at its issuer's path (koa-mount) is recognised and not stripped twice.
 */
export function servedUnder(
  prefix: string,
  stack: (ctx: Context, next?: Next) => Promise<unknown>,
  owns: (path: string) => boolean,
): Middleware {
  return async (ctx, next) => {
    const context = ctx as Context & { mountPath?: string };
    const alreadyMounted = prefix !== '' && context.mountPath === prefix;
    if (prefix === '' || alreadyMounted) return owns(ctx.path) ? stack(ctx) : next();
    if (ctx.path !== prefix && !ctx.path.startsWith(`${prefix}/`)) return next();
    const inner = ctx.path.slice(prefix.length) || '/';
    if (!owns(inner)) return next();
    const outerPath = ctx.path;
    const outerMount = context.mountPath;
    context.path = inner;
    context.mountPath = prefix;
    try {
      await stack(ctx);
    } finally {
      context.path = outerPath;
      context.mountPath = outerMount;
    }
  };
}
