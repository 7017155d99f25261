import type Router from '@koa/router';

/**
 * Whether a path is one the service answers, so that mounted in a host app it answers its own paths
 * and leaves every other one to the host (`IdentityService.middleware`). A path is ours when a route
 * of one of our routers matches it (any method: a wrong method is our 405), when it lies under the
 * prefix of one of our prefixed routers (our JSON APIs answer their own 404s), or under one of the
 * engine's prefixes.
 */
export function ownPaths(
  routers: readonly Router[],
  engine: { prefixes: readonly string[]; paths: readonly string[] },
): (path: string) => boolean {
  const prefixes = [
    ...engine.prefixes,
    ...routers.map((router) => router.opts.prefix).filter((prefix): prefix is string => Boolean(prefix)),
  ];
  const paths = new Set(engine.paths);
  return (path) =>
    paths.has(path) ||
    prefixes.some(
      (prefix) => path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`),
    ) ||
    routers.some((router) => router.match(path, 'GET').path.some((layer) => layer.methods.length > 0));
}
