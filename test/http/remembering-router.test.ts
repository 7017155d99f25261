import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RememberingRouter } from '../../src/http/remembering-router.js';

// A RememberingRouter answers as @koa/router does, the first time a path comes and every time after.
function routes(router: Router): Router {
  router.use((ctx, next) => {
    ctx.set('x-seen-by', 'api');
    return next();
  });
  router.get('/reference/subjects', (ctx) => {
    ctx.body = { route: ctx._matchedRoute, params: ctx.params, routerPath: ctx.routerPath };
  });
  router.get('/reference/:entity/:key', (ctx) => {
    ctx.body = { route: ctx._matchedRoute, params: ctx.params, routerPath: ctx.routerPath };
  });
  router.delete('/reference/:entity/:key', (ctx) => (ctx.status = 204));
  // Runs only when the routes before it pass the request on, as a catch-all after them does.
  router.get('/reference/:entity', async (ctx, next) => {
    if (ctx.params.entity === 'levels') await next();
    else ctx.body = { route: ctx._matchedRoute, params: ctx.params };
  });
  router.all(['/reference/:entity', '/reference/:entity/{*rest}'], (ctx) => {
    ctx.body = { route: ctx._matchedRoute, params: ctx.params, catchAll: true };
  });
  return router;
}

async function serve(router: Router, second: Router) {
  // The second router's layers join the first's in ctx.matched, as each router's do.
  second.use((ctx, next) => next());
  const app = new Koa();
  app.use(router.routes()).use(router.allowedMethods());
  app.use(second.routes()).use(second.allowedMethods());
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { fellThrough: true, matched: (ctx.matched as { path: string }[] | undefined)?.length ?? 0 };
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let remembering: Awaited<ReturnType<typeof serve>>;
let plain: Awaited<ReturnType<typeof serve>>;
let rememberingRouter: RememberingRouter;
let plainRouter: Router;

beforeAll(async () => {
  rememberingRouter = routes(new RememberingRouter({ prefix: '/api' }, 4)) as RememberingRouter;
  plainRouter = routes(new Router({ prefix: '/api' }));
  remembering = await serve(rememberingRouter, new RememberingRouter());
  plain = await serve(plainRouter, new Router());
});
afterAll(() => {
  remembering?.server.close();
  plain?.server.close();
});

async function answer(origin: string, method: string, path: string) {
  const response = await fetch(`${origin}${path}`, { method });
  return {
    status: response.status,
    allow: response.headers.get('allow'),
    seenBy: response.headers.get('x-seen-by'),
    body: await response.text(),
  };
}

const requests: [string, string][] = [
  ['GET', '/api/reference/subjects'],
  ['GET', '/api/reference/subjects/math'],
  ['GET', '/api/reference/subjects/ma%20th'],
  ['DELETE', '/api/reference/subjects/math'],
  ['PUT', '/api/reference/subjects/math'],
  ['GET', '/api/reference/formats'],
  ['GET', '/api/reference/levels'],
  ['POST', '/api/reference/levels/a/b'],
  ['OPTIONS', '/api/reference/subjects/math'],
  ['GET', '/api/elsewhere'],
  ['PROPFIND', '/api/reference/subjects'],
];

describe('RememberingRouter', () => {
  it('answers as @koa/router: params, matched route, 405 and Allow, fall-through', async () => {
    // Three times over: the first request of each path is worked out, the next ones remembered (and
    // with room for 4 paths only, forgotten and worked out again).
    for (let round = 0; round < 3; round++) {
      for (const [method, path] of requests) {
        expect(await answer(remembering.origin, method, path), `${method} ${path}`).toEqual(
          await answer(plain.origin, method, path),
        );
      }
    }
  });

  it('does not let one request change what the next is told matched', async () => {
    // The second router adds its layers to ctx.matched: a remembered list handed out as it is would
    // grow by one at each request.
    const answers = [];
    for (let index = 0; index < 3; index++)
      answers.push(await answer(remembering.origin, 'GET', '/api/elsewhere'));
    expect(answers.map((reply) => JSON.parse(reply.body))).toEqual(
      Array(3).fill({ fellThrough: true, matched: 2 }),
    );
  });

  it('finds a route added after paths were remembered', async () => {
    const path = '/api/history/math';
    expect((await answer(remembering.origin, 'GET', path)).status).toBe(404);
    for (const router of [rememberingRouter, plainRouter]) {
      router.get('/history/:key', (ctx) => (ctx.body = { history: ctx.params.key }));
    }
    expect(await answer(remembering.origin, 'GET', path)).toEqual(await answer(plain.origin, 'GET', path));
    expect(JSON.parse((await answer(remembering.origin, 'GET', path)).body)).toEqual({ history: 'math' });
  });

  it('matches the new patterns once the router is given another prefix', async () => {
    const router = new RememberingRouter({ prefix: '/old' });
    router.get('/thing', (ctx) => (ctx.body = 'thing'));
    const app = new Koa().use(router.routes()).use(router.allowedMethods());
    const server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect((await fetch(`${origin}/old/thing`)).status).toBe(200);
      router.prefix('/new');
      expect((await fetch(`${origin}/old/thing`)).status).toBe(404);
      expect(await (await fetch(`${origin}/new/thing`)).text()).toBe('thing');
    } finally {
      server.close();
    }
  });
});
