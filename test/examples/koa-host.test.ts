import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHostApp } from '../../examples/koa-host/host.js';
import { createIdentityService, loadConfig, type IdentityService } from '../../src/index.js';
import { createTestDatabase } from '../support/database.js';
import { createServiceClient } from '../support/fixtures.js';
import { discover, oidc } from '../support/relying-party.js';
import { testSecrets } from '../support/test-service.js';

let server: http.Server;
let identity: IdentityService;
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
  server.on('request', createHostApp(identity).callback());
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await identity?.close();
  await database?.close();
});

describe('examples/koa-host: the service mounted beside a host’s routes', () => {
  it('leaves the host its own paths, even under /assets and /api/v2', async () => {
    expect(await (await fetch(`${issuer}/`)).text()).toBe('the host app');
    expect(await (await fetch(`${issuer}/api/v2/other`)).json()).toEqual({ from: 'host' });
    expect(await (await fetch(`${issuer}/assets/host/logo.svg`)).text()).toBe(
      'host asset /assets/host/logo.svg',
    );
    // Paths nobody serves reach the host's 404, not the service's.
    for (const path of ['/api/v2/unknown', '/assets/nope.css', '/somewhere']) {
      const answer = await fetch(`${issuer}${path}`);
      expect(answer.status, path).toBe(404);
      expect(await answer.json(), path).toEqual({ error: 'host_not_found' });
    }
  });

  it('answers its own paths: assets, its API’s 404, health, discovery', async () => {
    const css = await fetch(`${issuer}/assets/management-dashboards.css`);
    expect(css.headers.get('content-type')).toContain('text/css');
    const api = await fetch(`${issuer}/api/v2/identity/nope`);
    expect(api.status).toBe(404);
    expect(await api.json()).toMatchObject({ error: 'not_found' });
    expect(await (await fetch(`${issuer}/healthz`)).json()).toEqual({ status: 'ok' });
    const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
      issuer: string;
    };
    expect(discovery.issuer).toBe(issuer);
  });

  it('serves a client_credentials flow through the host', async () => {
    const { client, clientSecret } = await createServiceClient(identity.db, ['service:crm.aggregates.read']);
    const config = await discover(issuer, client.clientId, clientSecret);
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'service:crm.aggregates.read' });
    expect(tokens.scope).toBe('service:crm.aggregates.read');
  });
});

describe('examples/koa-host: the service under its issuer’s path (/idp)', () => {
  let pathServer: http.Server;
  let pathIdentity: IdentityService;
  let origin: string;
  let pathIssuer: string;

  beforeAll(async () => {
    pathServer = http.createServer();
    await new Promise<void>((resolve) => pathServer.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(pathServer.address() as AddressInfo).port}`;
    pathIssuer = `${origin}/idp`;
    pathIdentity = await createIdentityService({
      config: loadConfig({ ISSUER: pathIssuer, LOG_LEVEL: 'silent' }),
      database,
      secrets: testSecrets(),
    });
    pathServer.on('request', createHostApp(pathIdentity).callback());
  });

  afterAll(async () => {
    pathServer?.closeAllConnections();
    await new Promise<void>((resolve) => pathServer?.close(() => resolve()));
    await pathIdentity?.close();
  });

  it('answers under /idp only; the host keeps every other path, the service’s included', async () => {
    expect(await (await fetch(`${origin}/`)).text()).toBe('the host app');
    expect(await (await fetch(`${origin}/api/v2/other`)).json()).toEqual({ from: 'host' });
    for (const path of ['/.well-known/openid-configuration', '/healthz', '/api/v2/identity/nope']) {
      const answer = await fetch(`${origin}${path}`);
      expect(answer.status, path).toBe(404);
      expect(await answer.json(), path).toEqual({ error: 'host_not_found' });
    }
    expect(await (await fetch(`${pathIssuer}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${pathIssuer}/assets/pages.css`)).status).toBe(200);
    // Under the path, what the service doesn't own is still the host's.
    expect(await (await fetch(`${pathIssuer}/somewhere`)).json()).toEqual({ error: 'host_not_found' });
  });

  it('serves a client_credentials flow found through discovery under the path', async () => {
    const { client, clientSecret } = await createServiceClient(pathIdentity.db, [
      'service:crm.aggregates.read',
    ]);
    const config = await discover(pathIssuer, client.clientId, clientSecret);
    expect(config.serverMetadata().token_endpoint).toBe(`${pathIssuer}/oauth/token`);
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'service:crm.aggregates.read' });
    expect(tokens.scope).toBe('service:crm.aggregates.read');
  });
});
