import Router, { type Layer, type MatchResult } from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import compose from 'koa-compose';
import { RecentAnswers } from './recent-answers.js';

interface Dispatch {
  match: MatchResult;
  /** The matched layers' middleware, composed once: @koa/router builds and composes it per request. */
  chain: Middleware;
  /** The route whose pattern names the request in metrics and logs (ctx._matchedRoute). */
  route: Layer | undefined;
}

type RoutedContext = Context & {
  matched?: Layer[];
  router?: Router;
  routeMatched?: boolean;
  captures?: string[];
  params: Record<string, string>;
  routerPath?: string;
  routerName?: string;
  _matchedRoute?: string | RegExp;
  _matchedRouteName?: string;
  newRouterPath?: string;
};

/**
 * A @koa/router that remembers, per method and path, which layers match and their middleware composed.
 * @koa/router tests every layer's pattern against each request, then builds and composes the chain of
 * the matched ones: a JSON API has dozens of routes, and the same few paths come again and again
 * (GET /reference/subjects, POST /auth/flow). It sets the context as @koa/router's own dispatch does
 * (`matched`, `params`, `_matchedRoute`...). What it remembers is forgotten when a route is added, and
 * all at once past `maxRemembered` paths, so a scan of random paths costs what it did, in bounded
 * memory (paths longer than 256 characters are never kept). Not for routers with a `host`, `exclusive`
 * or not-found handlers (ours have none).
 */
export class RememberingRouter extends Router {
  readonly #remembered: RecentAnswers<Dispatch>;
  #layerCount = 0;

  constructor(options?: ConstructorParameters<typeof Router>[0], maxRemembered = 1024) {
    super(options);
    this.#remembered = new RecentAnswers(maxRemembered);
  }

  override middleware(): ReturnType<Router['middleware']> {
    const dispatch = (ctx: RoutedContext, next: Next) => {
      const path = ctx.newRouterPath || ctx.path;
      const { match, chain, route } = this.#dispatchOf(path, ctx.method);
      // A later router extends ctx.matched in place: never the remembered array itself.
      if (ctx.matched) ctx.matched.push(...match.path);
      else ctx.matched = [...match.path];
      ctx.router = this;
      ctx.routeMatched = match.route;
      if (!match.route) return next();
      if (route) {
        ctx._matchedRoute = route.path;
        if (route.name) ctx._matchedRouteName = route.name;
      }
      return chain(ctx, next);
    };
    return Object.assign(dispatch, { router: this }) as unknown as ReturnType<Router['middleware']>;
  }

  /** A new prefix changes every route's pattern: what was remembered no longer holds. */
  override prefix(prefixPath: string): this {
    super.prefix(prefixPath);
    this.#remembered.clear();
    return this;
  }

  override routes(): ReturnType<Router['middleware']> {
    return this.middleware();
  }

  #dispatchOf(path: string, method: string): Dispatch {
    if (this.stack.length !== this.#layerCount) {
      this.#remembered.clear();
      this.#layerCount = this.stack.length;
    }
    return this.#remembered.get(`${method} ${path}`, () => {
      const match = this.match(path, method);
      return {
        match,
        chain: compose(
          match.pathAndMethod.flatMap((layer) => [entering(layer, path), ...layer.stack]),
        ) as Middleware,
        route: match.pathAndMethod.toReversed().find((layer) => layer.methods.length > 0),
      };
    });
  }
}

/** What @koa/router sets as a request enters a layer: its captures, params and pattern. */
function entering(layer: Layer, path: string): Middleware {
  return (ctx, next) => {
    const routed = ctx as RoutedContext;
    routed.captures = layer.captures(path);
    routed.params = layer.params(path, routed.captures, routed.params);
    (routed.request as { params?: Record<string, string> }).params = routed.params;
    routed.routerPath = layer.path as string;
    routed.routerName = layer.name || undefined;
    routed._matchedRoute = layer.path;
    if (layer.name) routed._matchedRouteName = layer.name;
    return next();
  };
}
