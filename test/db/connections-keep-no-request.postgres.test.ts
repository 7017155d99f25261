import { afterAll, beforeAll, expect, it } from 'vitest';
import { createServiceClient } from '../support/fixtures.js';
import { expectCollected, serveWatchingRequests } from '../support/garbage-collection.js';
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
  const served = await serveWatchingRequests(app);
  try {
    const post = async (path: string, authorization: string, body: string) => {
      const response = await fetch(`${served.base}${path}`, {
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
    await served.stop();
  }
  expect(served.requests).toHaveLength(200);
  await expectCollected(served.requests, 5_000);
}, 120_000);
