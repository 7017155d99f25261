import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Middleware } from 'koa';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createServiceClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * On PostgreSQL the service opens its connections (the pool's, the rate limits' store's) as requests
 * need them, and puts the pool's back at the end of each query. Whatever is made asynchronous during a
 * request carries the request's context; a connection, or the pool's record of a free one, made in it
 * kept the whole request reachable while the connection lived (up to its 30 s idle timeout, or the
 * process's life for the rate limits' store). src/outside-requests.ts.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

it('keeps no request reachable through the database connections it opened or put back', async () => {
  const { app, db } = service.service;
  const requests: WeakRef<object>[] = [];
  const watch: Middleware = async (ctx, next) => {
    requests.push(new WeakRef(ctx));
    await next();
  };
  app.middleware.unshift(watch);
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const post = async (path: string, authorization: string, body: string) => {
      const response = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
        body,
      });
      expect(response.status).toBe(200);
      await response.text();
    };
    const introspecting = await createServiceClient(db, ['service:crm.aggregates.read']);
    const introspector = basic(introspecting.client.clientId, introspecting.clientSecret!);
    // Five at a time: the pool and the rate limits' store open connections while these run.
    for (let round = 0; round < 20; round++) {
      const clients = await Promise.all(
        Array.from({ length: 5 }, () => createServiceClient(db, ['service:crm.aggregates.read'])),
      );
      await Promise.all(
        clients.map(async ({ client, clientSecret }) => {
          await post('/oauth/token', basic(client.clientId, clientSecret!), 'grant_type=client_credentials');
          await post('/oauth/introspect', introspector, 'token=x');
        }),
      );
    }
  } finally {
    app.middleware.splice(app.middleware.indexOf(watch), 1);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  expect(requests).toHaveLength(200);
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Collected between turns of the event loop (a WeakRef's target survives the job that made it).
  await vi.waitFor(
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
      expect(requests.filter((request) => request.deref() !== undefined)).toHaveLength(0);
    },
    { timeout: 5_000, interval: 50 },
  );
}, 120_000);
