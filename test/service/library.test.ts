import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import compose from 'koa-compose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createIdentityService, type IdentityService } from '../../src/index.js';
import { createTestDatabase } from '../support/database.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover } from '../support/relying-party.js';
import { testSecrets } from '../support/test-service.js';

let identity: IdentityService;
let server: http.Server;
let issuer: string;
let database: Awaited<ReturnType<typeof createTestDatabase>>;

beforeAll(async () => {
  database = await createTestDatabase();
  server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  identity = await createIdentityService({
    config: loadConfig({ ISSUER: issuer, LOG_LEVEL: 'silent' }),
    database,
    secrets: testSecrets(),
  });

  // Another application that mounts the identity service next to its own routes.
  const outer = new Koa();
  outer.keys = identity.app.keys; // the engine signs its cookies with the service's keys
  outer.use(async (ctx, next) => {
    if (ctx.path === '/health') {
      ctx.body = { ok: true };
      return;
    }
    await next();
  });
  outer.use(compose(identity.app.middleware));
  server.on('request', outer.callback());
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await identity?.close();
  await database?.close();
});

describe('createIdentityService() as a library', () => {
  it('returns a Koa app another Koa app can mount: its own routes and a whole OIDC flow work side by side', async () => {
    expect(await (await fetch(`${issuer}/health`)).json()).toEqual({ ok: true });
    const user = await createTestUser(identity.db);
    const { client } = await createTestClient(identity.db);
    const config = await discover(issuer, client.clientId);
    const { tokens } = await completeAuthorization(config, new HttpBrowser(issuer), {
      identifier: user.email!,
      password: user.password,
    });
    expect(tokens.claims()?.sub).toBe(user.id);
  });

  it('closes without closing a database it was given', async () => {
    const other = await createIdentityService({
      config: loadConfig({ ISSUER: issuer, LOG_LEVEL: 'silent' }),
      database,
      secrets: testSecrets(),
    });
    await other.close();
    expect((await database.db.raw('select 1 as one')).rows[0].one).toBe(1);
  });
});
