import http from 'node:http';
import type { AddressInfo } from 'node:net';
import crypto from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import Koa from 'koa';
import Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ecosystemPrincipalOf,
  requirePermission,
  requireServiceScope,
  verifyEcosystemTokens,
  type ResourceServerOptions,
} from '../../src/platform/client/index.js';
import type { SigningKey } from '../../src/keys/signing-keys.js';
import { createServiceClient, createTestUser } from '../support/fixtures.js';
import { discover, oidc } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient } from '../identity/support/identity-client.js';

/** Another service of the ecosystem, guarding its routes with the kit against the running identity service. */
async function startResourceServer(options: ResourceServerOptions) {
  const router = new Router();
  router.get('/whoami', (ctx) => {
    const principal = ecosystemPrincipalOf(ctx);
    ctx.body = { kind: principal.kind, token: principal.token, clientId: principal.clientId ?? null };
  });
  router.get('/reports', requirePermission('reports.read'), (ctx) => (ctx.body = { reports: [] }));
  router.get('/crm', requireServiceScope('service:crm.aggregates.read'), (ctx) => (ctx.body = { ok: true }));
  const app = new Koa().use(verifyEcosystemTokens(options)).use(router.routes());
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let identity: TestService;
let resourceServer: Awaited<ReturnType<typeof startResourceServer>>;
let serviceToken: string;
let mainAuthToken: string;

beforeAll(async () => {
  identity = await startTestService();
  resourceServer = await startResourceServer({
    issuer: identity.issuer,
    audience: identity.service.config.apiAudience,
  });
  const { client, clientSecret } = await createServiceClient(identity.service.db, [
    'service:crm.aggregates.read',
  ]);
  const config = await discover(identity.issuer, client.clientId, clientSecret);
  serviceToken = (await oidc.clientCredentialsGrant(config, { scope: 'service:crm.aggregates.read' }))
    .access_token;
  const admin = await createTestUser(identity.service.db, { roles: ['super_admin'] });
  mainAuthToken = (await new IdentityClient(identity).login(admin.email!, admin.password)).accessToken;
});
afterAll(async () => {
  await resourceServer?.close();
  await identity?.close();
});

async function call(path: string, token?: string, server = resourceServer) {
  const response = await fetch(`${server.url}${path}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

describe('the resource-server kit against the running identity service', () => {
  it('tells the token kinds apart: a service token, a main-auth login, an OAuth user token', async () => {
    expect((await call('/whoami', serviceToken)).body).toMatchObject({
      kind: 'service',
      token: 'oauth-service',
    });
    expect((await call('/whoami', mainAuthToken)).body).toMatchObject({ kind: 'user', token: 'main-auth' });
    const { tokens, client } = await userWithTokens(identity);
    expect((await call('/whoami', tokens.access_token)).body).toEqual({
      kind: 'user',
      token: 'oauth-user',
      clientId: client.clientId,
    });
  });

  it('answers 401 with an RFC 6750 challenge: no token, a forged or foreign one', async () => {
    const none = await call('/whoami');
    expect(none).toMatchObject({ status: 401, challenge: 'Bearer', body: { error: 'unauthorized' } });
    const [header, payload] = serviceToken.split('.');
    const forged = await call('/whoami', `${header}.${payload}.${'A'.repeat(342)}`);
    expect(forged.status).toBe(401);
    expect(forged.body.error).toBe('invalid_token');
    expect(forged.challenge).toMatch(/^Bearer error="invalid_token", error_description="/);

    // A resource server of another audience refuses the ecosystem's tokens.
    const elsewhere = await startResourceServer({ issuer: identity.issuer, audience: 'urn:other:api' });
    try {
      expect((await call('/whoami', mainAuthToken, elsewhere)).body).toMatchObject({
        error: 'invalid_token',
      });
    } finally {
      await elsewhere.close();
    }
  });

  it('requireServiceScope: only a service token holding the scope', async () => {
    expect((await call('/crm', serviceToken)).status).toBe(200);
    const user = await call('/crm', mainAuthToken);
    expect(user).toMatchObject({ status: 403, body: { error: 'insufficient_scope' } });
    expect(user.challenge).toContain('scope="service:crm.aggregates.read"');
  });

  it('requirePermission: the user authority of a main-auth token, service:<permission> of a service', async () => {
    expect((await call('/reports', mainAuthToken)).status).toBe(200);
    // A service acts through its service:<permission> scopes only: it has no service:reports.read.
    expect(await call('/reports', serviceToken)).toMatchObject({ status: 403, body: { error: 'forbidden' } });
  });

  it("an OAuth user token of a third-party application doesn't carry the user's authority", async () => {
    const { tokens } = await userWithTokens(identity);
    const answer = await call('/reports', tokens.access_token);
    expect(answer).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    expect(answer.body.message).toContain("does not carry the user's authority");
  });

  it("refuses other applications' user tokens when told to: acceptThirdPartyUserTokens false", async () => {
    const firstParty = await userWithTokens(identity);
    const thirdParty = await userWithTokens(identity);
    const ownAppsOnly = await startResourceServer({
      issuer: identity.issuer,
      audience: identity.service.config.apiAudience,
      firstPartyClients: [firstParty.client.clientId],
      acceptThirdPartyUserTokens: false,
    });
    try {
      const refused = await call('/whoami', thirdParty.tokens.access_token, ownAppsOnly);
      expect(refused).toMatchObject({ status: 401, body: { error: 'invalid_token' } });
      expect(refused.challenge).toMatch(/^Bearer error="invalid_token"/);
      expect((await call('/whoami', firstParty.tokens.access_token, ownAppsOnly)).body).toEqual({
        kind: 'user',
        token: 'oauth-user',
        clientId: firstParty.client.clientId,
      });
      expect((await call('/whoami', mainAuthToken, ownAppsOnly)).status).toBe(200);
      expect((await call('/whoami', serviceToken, ownAppsOnly)).status).toBe(200);
    } finally {
      await ownAppsOnly.close();
    }
  });

  it('binds each key to its kind: a token signed by the other purpose’s key is refused', async () => {
    const { keys, config } = identity.service;
    const now = Math.floor(Date.now() / 1000);
    const sign = (key: SigningKey, typ: string, claims: Record<string, unknown>) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ })
        .setIssuer(identity.issuer)
        .setAudience(config.apiAudience)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(key.privateKey);
    // Shaped like a main-auth token of an administrator, signed by the OAuth (OIDC) key.
    const mainAuthByOidcKey = await sign(keys.oidc, 'JWT', {
      sub: crypto.randomUUID(),
      sessionId: crypto.randomUUID(),
      tokenId: crypto.randomUUID(),
      roles: ['super_admin'],
      permissions: ['*'],
    });
    // Shaped like a service token, signed by the main-auth key.
    const serviceByMainAuthKey = await sign(keys.mainAuth, 'at+jwt', {
      sub: 'some-service',
      client_id: 'some-service',
      serviceClient: true,
      scope: 'service:crm.aggregates.read',
    });
    // The same shapes signed by the right keys pass: only the key decides here.
    expect(
      (await call('/crm', await sign(keys.oidc, 'at+jwt', jwtClaims(serviceByMainAuthKey)))).status,
    ).toBe(200);
    expect(
      (await call('/reports', await sign(keys.mainAuth, 'JWT', jwtClaims(mainAuthByOidcKey)))).status,
    ).toBe(200);

    for (const [path, token] of [
      ['/reports', mainAuthByOidcKey],
      ['/crm', serviceByMainAuthKey],
    ] as const) {
      const answer = await call(path, token);
      expect(answer).toMatchObject({ status: 401, body: { error: 'invalid_token' } });
    }
  });
});

/** A token's claims without the registered ones SignJWT sets again. */
function jwtClaims(token: string): Record<string, unknown> {
  const { iss: _iss, aud: _aud, iat: _iat, exp: _exp, ...claims } = decodeJwt(token);
  return claims;
}
