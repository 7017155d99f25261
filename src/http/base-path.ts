import type { Context } from 'koa';

/**
 * The path the service is mounted under in its host app ('' at the root): koa-mount sets
 * `ctx.mountPath`. Every absolute URL the service writes into a page or a redirect goes through
 * `publicPath`, so the pages keep working when the service is mounted below a path.
 */
export function basePath(ctx: Pick<Context, 'state'> & { mountPath?: string }): string {
  return ctx.mountPath ?? '';
}

/** `path` (starting with `/`) as the browser must request it. */
export function publicPath(ctx: Pick<Context, 'state'> & { mountPath?: string }, path: string): string {
  return `${basePath(ctx)}${path}`;
}
