import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdentityService, loadConfig, type IdentityService } from '../../src/index.js';
import { createTestDatabase } from '../support/database.js';
import { createTestClient } from '../support/fixtures.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { testSecrets } from '../support/test-service.js';

// A host app behind its own load balancer sets `proxy = true` (every X-Forwarded-For entry trusted).
// The service mounted in it (TRUST_PROXY unset: no proxy in front of it) must still count callers by
// what it trusts, not by the host's setting: otherwise a caller writes a new X-Forwarded-For per
// request and every per-address rate limit and lockout of the service is gone.
let server: http.Server;
let identity: IdentityService;
let issuer: string;
let database: Awaited<ReturnType<typeof createTestDatabase>>;

beforeAll(async () => {
  database = await createTestDatabase();
  server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/idp`;
  identity = await createIdentityService({
    config: loadConfig({ ISSUER: issuer, LOG_LEVEL: 'silent' }),
    database,
    secrets: testSecrets(),
  });
  const host = new Koa();
  host.keys = identity.app.keys;
  host.proxy = true;
  const seenByHost: string[] = [];
  host.use(async (ctx, next) => {
    seenByHost.push(ctx.ip); // the host reads (and Koa caches) its own view first
    await next();
  });
  host.use(identity.middleware);
  server.on('request', host.callback());
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await identity?.close();
  await database?.close();
});

describe('the service in a host app that trusts X-Forwarded-For', () => {
  it('counts a caller by its connection, whatever X-Forwarded-For it writes', async () => {
    const { client } = await createTestClient(identity.db);
    const statuses: number[] = [];
    for (let index = 0; index < 32; index++) {
      const url = `${issuer}/oauth/authorize?${new URLSearchParams({
        client_id: client.clientId,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: 'https://evil.example/callback',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      })}`;
      const answer = await fetch(url, { redirect: 'manual', headers: { 'x-forwarded-for': uniqueIp() } });
      statuses.push(answer.status);
    }
    expect(statuses.slice(30)).toEqual([429, 429]);
  });
});
