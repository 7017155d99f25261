import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyEcosystemTokens } from '../../src/platform/client/index.js';

// A token's header is the caller's to write: one naming an extension jose doesn't know (`crit`) made
// jose throw JOSENotSupported before any key was looked at, and the kit passed that on as a server
// error (500, logged as the resource server's failure) instead of refusing the token.
let server: http.Server;
let resourceServer: http.Server;
let url: string;
let jwksRequests = 0;

beforeAll(async () => {
  server = http.createServer((_request, response) => {
    jwksRequests++;
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ keys: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const app = new Koa();
  app.silent = true;
  app.use(verifyEcosystemTokens({ issuer })).use((ctx) => (ctx.body = 'secret'));
  resourceServer = http.createServer(app.callback());
  await new Promise<void>((resolve) => resourceServer.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(resourceServer.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  for (const each of [resourceServer, server])
    await new Promise<void>((resolve) => each.close(() => resolve()));
});

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('the resource-server kit and a forged header', () => {
  it('refuses a token with an unknown critical extension with 401', async () => {
    for (const typ of ['at+jwt', 'JWT']) {
      const header = { alg: 'RS256', typ, kid: 'any', crit: ['x-unknown'], 'x-unknown': true };
      const token = `${part(header)}.${part({ sub: 'someone' })}.${part({})}`;
      const answer = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(answer.status, typ).toBe(401);
      expect(await answer.json(), typ).toMatchObject({ error: 'invalid_token' });
    }
    expect(jwksRequests).toBe(0);
  });
});
