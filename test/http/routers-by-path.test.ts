import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routersByPath } from '../../src/http/routers-by-path.js';

// The routers of an app dispatched by path answer exactly as the same routers used one after another.
const routers = () => {
  const pages = new Router();
  pages.get('/:lang/dashboards', (ctx) => (ctx.body = `dashboards ${ctx.params.lang}`));
  const identity = new Router({ prefix: '/api/v2/identity' });
  identity.use((ctx, next) => {
    ctx.set('x-router', 'identity');
    return next();
  });
  identity.get('/me', (ctx) => (ctx.body = 'me'));
  identity.post('/flow/:id', (ctx) => (ctx.body = `flow ${ctx.params.id}`));
  const platform = new Router({ prefix: '/api/v2/platform' });
  platform.get('/reference/:entity', (ctx) => (ctx.body = `list ${ctx.params.entity}`));
  platform.delete('/reference/:entity/:key', (ctx) => (ctx.status = 204));
  const wellKnown = new Router();
  wellKnown.get('/.well-known/jwks.json', (ctx) => (ctx.body = 'jwks'));
  return [pages, identity, platform, wellKnown];
};

async function serve(app: Koa) {
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = 'fell through';
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let byPath: Awaited<ReturnType<typeof serve>>;
let oneAfterAnother: Awaited<ReturnType<typeof serve>>;
let exposedPlatform: Router;

beforeAll(async () => {
  const dispatched = routers();
  exposedPlatform = dispatched[2]!;
  const first = new Koa();
  first.use(routersByPath(dispatched));
  byPath = await serve(first);
  const second = new Koa();
  for (const router of routers()) second.use(router.routes()).use(router.allowedMethods());
  oneAfterAnother = await serve(second);
});
afterAll(() => {
  byPath?.server.close();
  oneAfterAnother?.server.close();
});

async function answer(origin: string, method: string, path: string) {
  const response = await fetch(`${origin}${path}`, { method });
  return {
    status: response.status,
    allow: response.headers.get('allow'),
    router: response.headers.get('x-router'),
    body: await response.text(),
  };
}

describe('routersByPath', () => {
  it.each([
    ['GET', '/api/v2/identity/me'],
    ['POST', '/api/v2/identity/flow/abc'],
    ['GET', '/api/v2/identity/flow/abc'],
    ['PUT', '/api/v2/platform/reference/subject'],
    ['OPTIONS', '/api/v2/platform/reference/subject/x'],
    ['GET', '/api/v2/platform/reference/subject'],
    ['DELETE', '/api/v2/platform/reference/subject/k1'],
    ['GET', '/api/v2/platform/nope'],
    ['GET', '/en/dashboards'],
    ['GET', '/api/dashboards'],
    ['GET', '/en/dashboards/'],
    ['GET', '//dashboards'],
    ['GET', '/en/dashboards/more'],
    ['GET', '/api/v2/platform/reference'],
    ['GET', '/api/v2/platform/reference/'],
    ['DELETE', '/api/v2/platform/reference/subject/'],
    ['GET', '/.well-known/jwks.json'],
    ['POST', '/.well-known/jwks.json'],
    ['GET', '/'],
    ['GET', '//api/v2/identity/me'],
    ['GET', '/api/v2/identity/%6De'],
  ])('%s %s answers as the routers one after another', async (method, path) => {
    expect(await answer(byPath.origin, method, path)).toEqual(
      await answer(oneAfterAnother.origin, method, path),
    );
  });

  it('matches paths with case (RFC 3986): another spelling of a route is 404', async () => {
    expect((await answer(byPath.origin, 'GET', '/api/v2/identity/me')).status).toBe(200);
    expect((await answer(byPath.origin, 'GET', '/API/V2/Identity/me')).status).toBe(404);
  });

  it('finds a route added to a router after the app was built', async () => {
    expect((await answer(byPath.origin, 'GET', '/api/v2/platform/flags')).status).toBe(404);
    exposedPlatform.get('/flags', (ctx) => (ctx.body = 'flags'));
    expect(await answer(byPath.origin, 'GET', '/api/v2/platform/flags')).toMatchObject({
      status: 200,
      body: 'flags',
    });
  });
});
