import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ReferenceDataClient } from '../../src/platform/client/reference-data-client.js';
import { serviceTokenProvider } from '../../src/platform/client/service-token-provider.js';
import { createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import {
  buildAuthorizationRequest,
  completeAuthorization,
  discover,
  oidc,
} from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
let origin: string;

beforeAll(async () => {
  service = await startTestService({ issuerPath: '/idp' });
  origin = new URL(service.issuer).origin;
});
afterAll(() => service?.close());

describe('an issuer with a path (https://host/idp)', () => {
  it('is accepted by loadConfig, a query or fragment is not', () => {
    expect(loadConfig({ ISSUER: 'https://id.example.com/idp/' }).issuer).toBe('https://id.example.com/idp');
    expect(() => loadConfig({ ISSUER: 'https://id.example.com/idp?x=1' })).toThrow(/ISSUER/);
  });

  it('publishes discovery under the path, every endpoint under it too', async () => {
    const answer = await fetch(`${service.issuer}/.well-known/openid-configuration`);
    expect(answer.status).toBe(200);
    const discovery = (await answer.json()) as Record<string, unknown>;
    expect(discovery.issuer).toBe(service.issuer);
    const endpoints = Object.entries(discovery).filter(
      ([key, value]) => (key.endsWith('_endpoint') || key === 'jwks_uri') && typeof value === 'string',
    );
    expect(endpoints.length).toBeGreaterThan(5);
    for (const [key, value] of endpoints) expect(value, key).toMatch(new RegExp(`^${service.issuer}/`));
    // Nothing answers outside the issuer's path.
    expect((await fetch(`${origin}/.well-known/openid-configuration`)).status).toBe(404);
    expect((await fetch(`${origin}/healthz`)).status).toBe(404);
    expect((await fetch(`${service.issuer}/healthz`)).status).toBe(200);
  });

  it('signs a user in through discovery, the pages and the token endpoint, cookies kept under the path', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const { client } = await createTestClient(db, {
      postLogoutRedirectUris: ['http://localhost:8080/signed-out'],
    });
    const config = await discover(service.issuer, client.clientId);
    const browser = new HttpBrowser(origin);

    // The sign-in page, its links and its assets: all under the path.
    const page = await new HttpBrowser(origin).navigate(
      (await buildAuthorizationRequest(config)).url.toString(),
    );
    expect(new URL(page.url).pathname).toMatch(/^\/idp\/en\/auth/);
    expect(page.html).toContain('href="/idp/assets/pages.css"');
    expect((await fetch(`${origin}/idp/assets/pages.css`)).status).toBe(200);

    const { tokens } = await completeAuthorization(config, browser, {
      identifier: user.email!,
      password: user.password,
      parameters: { scope: 'openid email' },
    });
    expect(tokens.claims()).toMatchObject({ iss: service.issuer, sub: user.id });
    expect(await oidc.fetchUserInfo(config, tokens.access_token, user.id)).toMatchObject({ sub: user.id });
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toBeTruthy();

    const cookies = browser.cookiePaths();
    expect(cookies.length).toBeGreaterThan(0);
    for (const cookie of cookies) expect(cookie.path, cookie.name).toMatch(/^\/idp(\/|$)/);

    // RP-initiated logout under the path: the single-logout page, the refresh token revoked.
    const endSession = new URL(config.serverMetadata().end_session_endpoint!);
    expect(endSession.pathname).toBe('/idp/oauth/end_session');
    endSession.search = new URLSearchParams({
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: 'http://localhost:8080/signed-out',
    }).toString();
    const loggedOut = await browser.navigate(endSession.toString());
    expect(new URL(loggedOut.url).pathname).toBe('/idp/en/auth/single-logout');
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it.each(['/en/admin/oauth-clients', '/en/management/dashboards'])(
    'links %s to the sign-in page with a return_to the sign-in page puts under the path once',
    async (pagePath) => {
      const page = await new HttpBrowser(origin).navigate(`${origin}/idp${pagePath}`);
      const signIn = /href="(\/idp\/en\/auth\?return_to=[^"]+)"/.exec(page.html)?.[1];
      expect(signIn, 'the sign-in link').toBeDefined();
      // The sign-in page redirects to publicPath(return_to): a return_to holding /idp would become /idp/idp/...
      expect(new URL(signIn!.replaceAll('&amp;', '&'), origin).searchParams.get('return_to')).toBe(pagePath);
    },
  );

  it('serves the platform client given the issuer as its base: reference data under the path', async () => {
    const scope = 'service:platform.reference-data.read';
    const { client, clientSecret } = await createServiceClient(service.service.db, [scope]);
    const reader = new ReferenceDataClient({
      baseUrl: service.issuer,
      accessToken: serviceTokenProvider({
        issuer: service.issuer,
        clientId: client.clientId,
        clientSecret: clientSecret!,
        scope,
      }),
      events: service.service.events.bus,
    });
    try {
      await reader.start();
      expect(reader.list('level').length).toBeGreaterThan(0);
    } finally {
      reader.close();
    }
  });

  it('works in a host that already mounted it at the issuer’s path (as koa-mount does)', async () => {
    const host = new Koa();
    host.keys = service.service.app.keys;
    // koa-mount('/idp', ...): the path stripped, the prefix in ctx.mountPath.
    host.use(async (ctx, next) => {
      if (!ctx.path.startsWith('/idp/')) return next();
      const outer = ctx.path;
      ctx.path = outer.slice('/idp'.length);
      (ctx as { mountPath?: string }).mountPath = '/idp';
      await service.service.middleware(ctx, next);
      ctx.path = outer;
    });
    host.use((ctx) => {
      ctx.status = 404;
      ctx.body = { error: 'host_not_found' };
    });
    const server = http.createServer(host.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const at = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const discovery = await fetch(`${at}/idp/.well-known/openid-configuration`);
      expect(((await discovery.json()) as { issuer: string }).issuer).toBe(service.issuer);
      expect(await (await fetch(`${at}/idp/nowhere`)).json()).toEqual({ error: 'host_not_found' });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
