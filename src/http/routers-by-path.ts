import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import type { ApiError } from './api-error.js';
import { RecentAnswers } from './recent-answers.js';
import { methodNotAllowed, noSuchPath } from './unanswered-requests.js';

/** A character of path-to-regexp's syntax: a segment holding one is not matched literally. */
const patternSyntax = /[:*{}()[\]+?!\\]/;

interface PrefixNode {
  children: Map<string, PrefixNode>;
  /** Where a segment that is one whole parameter (`/:lang/auth`'s first) leads: any one segment. */
  anySegment?: PrefixNode;
  /** Routers with a route whose leading segments end here. */
  routers: Set<number>;
}

/** A segment that is one parameter and nothing else: path-to-regexp matches it to any non-empty segment. */
const wholeParameter = /^:[A-Za-z_$][\w$]*$/;
const anySegment = Symbol('any segment');

interface Dispatch {
  /** The routers' route count when this was built: a route added since means building it again. */
  size: number;
  root: PrefixNode;
  /** Per set of routers (finite), their chain. */
  chainOfRouters: Map<string, Middleware>;
  /** Per path seen lately, its chain. */
  chainOfPath: RecentAnswers<Middleware>;
}

/**
 * The routers' `routes()` and `allowedMethods()` in their order, as one middleware that hands a request
 * only to the routers with a route that could match its path. Each router otherwise tests every route's
 * pattern against every request that reaches it, and most of ours sit under /api/v2/...: a request for
 * the last router paid for all the others (measured: about a fifth of GET /subjects' time).
 *
 * A route can only match paths that start with its leading segments: its literal ones
 * (`/api/v2/platform/:entity`: api, v2, platform), compared with case (paths are case-sensitive, RFC
 * 3986 §6.2.2.1), and a segment that is one whole parameter (`/:lang/auth`'s first) standing for any
 * non-empty one: so the pages under /:lang/ are not asked about /api/v2/... paths. The routers
 * match routes without case but their middleware (a JSON API's error body, its body parser) with it, so
 * `/API/V2/...` reached a route without them; it is 404 here. A router none of whose routes can match
 * would only have called `next()`: routers and their 405s (which look at the routes matched by path,
 * ctx.matched) answer as before. Routes added to a router later (a host adding to an exposed router)
 * are seen: the table is rebuilt when the routers' route count changes.
 */
export function routersByPath(routers: readonly Router[]): Middleware {
  let built: Dispatch | undefined;
  const routeCount = () => routers.reduce((sum, router) => sum + router.stack.length, 0);

  return function dispatchByPath(ctx, next) {
    const size = routeCount();
    if (built?.size !== size) {
      built = {
        size,
        root: prefixTree(routers),
        chainOfRouters: new Map(),
        chainOfPath: new RecentAnswers(1024),
      };
    }
    const path = (ctx as { newRouterPath?: string }).newRouterPath || ctx.path;
    const { root, chainOfRouters } = built;
    const chain = built.chainOfPath.get(path, () => {
      const indexes = routersOnTheWay(root, path);
      const key = indexes.join(',');
      let ofRouters = chainOfRouters.get(key);
      if (!ofRouters) {
        ofRouters = chainOf(routers, indexes);
        chainOfRouters.set(key, ofRouters);
      }
      return ofRouters;
    });
    const answered = chain(ctx, next);
    // Only a method no router implements is answered 501: the others pay for no extra step.
    if (routerMethods.has(ctx.method)) return answered;
    return answered.then(() => {
      if (ctx.status === 501) throw methodNoRouteHas(ctx, routers, path);
    });
  };
}

/**
 * The routers of every node a prefix of the path's segments leads to, by a literal segment or through
 * a whole-parameter one, in their order. The set of routers is finite, so are the chains kept per set.
 */
function routersOnTheWay(root: PrefixNode, path: string): number[] {
  const found = new Set<number>(root.routers);
  let frontier = [root];
  let start = 1;
  while (frontier.length > 0 && start <= path.length) {
    const end = path.indexOf('/', start);
    const segment = path.slice(start, end === -1 ? undefined : end);
    const next: PrefixNode[] = [];
    for (const node of frontier) {
      const literal = node.children.get(segment);
      if (literal) next.push(literal);
      if (node.anySegment && segment !== '') next.push(node.anySegment);
    }
    for (const node of next) for (const index of node.routers) found.add(index);
    frontier = next;
    if (end === -1) break;
    start = end + 1;
  }
  return [...found].sort((a, b) => a - b);
}

/** The methods @koa/router implements (its `methods` option's default). */
const routerMethods = new Set(['HEAD', 'OPTIONS', 'GET', 'PUT', 'PATCH', 'POST', 'DELETE']);

/**
 * @koa/router answers a method none of a router's routes has (TRACE, PROPFIND) with a plain 501, over
 * whatever a later handler wrote, and with the Allow of whichever router looked last. The path's own
 * methods are those of every route matching it: 405 with them (RFC 9110 §15.5.6), or 404 for none.
 */
function methodNoRouteHas(ctx: Context, routers: readonly Router[], path: string): ApiError {
  const methods = new Set(
    routers.flatMap((router) =>
      router.stack
        .filter((layer) => layer.methods.length > 0 && layer.match(path))
        .flatMap((layer) => layer.methods),
    ),
  );
  return methods.size > 0 ? methodNotAllowed(ctx, [...methods].join(', ')) : noSuchPath();
}

function prefixTree(routers: readonly Router[]): PrefixNode {
  const root: PrefixNode = { children: new Map(), routers: new Set() };
  routers.forEach((router, index) => {
    for (const layer of router.stack) {
      if (layer.methods.length === 0) continue; // middleware: runs only when a route of its router matched
      let node = root;
      for (const segment of leadingSegments(layer.path)) {
        if (segment === anySegment) {
          node.anySegment ??= { children: new Map(), routers: new Set() };
          node = node.anySegment;
          continue;
        }
        let child = node.children.get(segment);
        if (!child) {
          child = { children: new Map(), routers: new Set() };
          node.children.set(segment, child);
        }
        node = child;
      }
      node.routers.add(index);
    }
  });
  return root;
}

/**
 * `/api/v2/platform/:entity` → api, v2, platform, any; `/:lang/auth` → any, auth. Up to the first
 * segment holding other pattern syntax; a pattern not written as a string: none.
 */
function leadingSegments(path: unknown): (string | typeof anySegment)[] {
  if (typeof path !== 'string') return [];
  const segments: (string | typeof anySegment)[] = [];
  for (const segment of path.split('/').slice(1)) {
    if (wholeParameter.test(segment)) {
      segments.push(anySegment);
      continue;
    }
    if (segment === '' || patternSyntax.test(segment)) break;
    segments.push(segment);
  }
  return segments;
}

/** The routers, in their order, each as routes() then allowedMethods(). */
function chainOf(routers: readonly Router[], indexes: readonly number[]): Middleware {
  return compose(
    indexes.flatMap((index) => [routers[index]!.routes(), routers[index]!.allowedMethods()]),
  ) as Middleware;
}
