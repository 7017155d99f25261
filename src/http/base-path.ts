import type { Context } from 'koa';

/**
 * The path the service answers under ('' at the root): the issuer's path (https://host/idp → /idp),
 * which the service strips from `ctx.path` and keeps in `ctx.mountPath` while it answers (as koa-mount
 * does). Every absolute URL the service writes into a page or a redirect goes through
 * `publicPath`, so the pages keep working when the service is mounted below a path.
 */
export function basePath(ctx: Pick<Context, 'state'> & { mountPath?: string }): string {
  return ctx.mountPath ?? '';
}

/** `path` (starting with `/`) as the browser must request it. */
export function publicPath(ctx: Pick<Context, 'state'> & { mountPath?: string }, path: string): string {
  return `${basePath(ctx)}${path}`;
}

/** The path of an issuer, without a trailing slash: '' for https://host, '/idp' for https://host/idp/. */
export function issuerPath(issuer: string): string {
  return new URL(issuer).pathname.replace(/\/+$/, '');
}
