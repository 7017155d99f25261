import crypto from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { clientsCreateCommand, clientsListCommand } from '../../src/cli/commands/clients.js';
import { runCommand } from '../../src/cli/run-command.js';
import { loadUserAccess } from '../../src/identity/access/user-access.js';
import { updateClient } from '../../src/oidc/models/oauth-client.js';
import { callbackUri, createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc } from '../support/relying-party.js';
import { introspectAs } from '../support/resource-server-calls.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const unique = (prefix: string) => `${prefix}_${crypto.randomBytes(4).toString('hex')}`;

/** The three management calls of the probe, each with a bearer token; their statuses and error codes. */
async function managementCalls(token: string) {
  const call = async (path: string, body: unknown) => {
    const response = await fetch(service.url(path), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as { error?: string };
    return { status: response.status, error: answer.error };
  };
  return {
    subjects: await call('/api/v2/platform/reference/subjects', {
      key: unique('subject'),
      title: { en: 'Probe' },
    }),
    register: await call('/oauth/clients/register', {
      name: 'Probe',
      type: 'public',
      redirect_uris: [callbackUri],
      scopes: ['openid'],
    }),
    featureFlags: await call('/api/v2/platform/feature-flags', { key: unique('probe') }),
  };
}

const refusedEverywhere = {
  subjects: { status: 403, error: 'forbidden' },
  register: { status: 403, error: 'forbidden' },
  featureFlags: { status: 403, error: 'forbidden' },
};
const allowedEverywhere = {
  subjects: { status: 201 },
  register: { status: 201 },
  featureFlags: { status: 201 },
};

/** A super_admin signs in to a client through the pages; the tokens openid-client received. */
async function superAdminSignsIn(options: { firstParty: boolean; scope: string }) {
  const { db } = service.service;
  const user = await createTestUser(db, { roles: ['super_admin'] });
  const { client } = await createTestClient(db, { firstParty: options.firstParty });
  const config = await discover(service.issuer, client.clientId);
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: user.email!,
    password: user.password,
    parameters: { scope: options.scope },
  });
  return { user, client, config, tokens };
}

describe('an OAuth access token carries roles and permissions only when the roles scope was granted', () => {
  it('a super_admin signing in to a client with scope=openid: no roles, no permissions, also after refresh', async () => {
    const { user, config, tokens } = await superAdminSignsIn({ firstParty: false, scope: 'openid' });
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({ sub: user.id, scope: 'openid' });
    expect(claims).not.toHaveProperty('roles');
    expect(claims).not.toHaveProperty('permissions');
    expect(tokens.claims()).not.toHaveProperty('global_roles');

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(decodeJwt(refreshed.access_token)).not.toHaveProperty('permissions');
    expect(decodeJwt(refreshed.access_token)).not.toHaveProperty('roles');
  });

  it('with roles granted, the token, id_token and userinfo carry them (the spec’s claims)', async () => {
    const { user, config, tokens } = await superAdminSignsIn({ firstParty: false, scope: 'openid roles' });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ roles: ['super_admin'], permissions: ['*'] });
    expect(tokens.claims()).toMatchObject({ global_roles: ['super_admin'], permissions: ['*'] });
    expect(await oidc.fetchUserInfo(config, tokens.access_token, user.id)).toMatchObject({
      global_roles: ['super_admin'],
      permissions: ['*'],
    });
  });
});

describe('the service’s management endpoints take a user’s authority only from tokens that carry it', () => {
  it('refuse a third-party client’s token of a super_admin (scope=openid) with 403, also after refresh', async () => {
    const { config, tokens } = await superAdminSignsIn({ firstParty: false, scope: 'openid' });
    expect(await managementCalls(tokens.access_token)).toMatchObject(refusedEverywhere);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(await managementCalls(refreshed.access_token)).toMatchObject(refusedEverywhere);
  });

  it('refuse a third-party client’s token even with the roles scope granted, also after refresh', async () => {
    const { config, tokens } = await superAdminSignsIn({ firstParty: false, scope: 'openid roles' });
    expect(await managementCalls(tokens.access_token)).toMatchObject(refusedEverywhere);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(await managementCalls(refreshed.access_token)).toMatchObject(refusedEverywhere);
  });

  it('refuse a first-party client’s token without the roles scope', async () => {
    const { tokens } = await superAdminSignsIn({ firstParty: true, scope: 'openid profile' });
    expect(await managementCalls(tokens.access_token)).toMatchObject(refusedEverywhere);
  });

  it('accept a first-party client’s token with the roles scope granted, also after refresh', async () => {
    const { config, tokens } = await superAdminSignsIn({ firstParty: true, scope: 'openid roles' });
    expect(await managementCalls(tokens.access_token)).toMatchObject(allowedEverywhere);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(await managementCalls(refreshed.access_token)).toMatchObject(allowedEverywhere);
  });

  it('accept the same user’s main-auth token', async () => {
    const user = await createTestUser(service.service.db, { roles: ['super_admin'] });
    const token = await mainAuthToken(service, user, await loadUserAccess(service.service.db, user.id));
    expect(await managementCalls(token)).toMatchObject(allowedEverywhere);
  });

  it('still let a third-party client’s token read the reference data', async () => {
    const { tokens } = await superAdminSignsIn({ firstParty: false, scope: 'openid' });
    const response = await fetch(service.url('/api/v2/platform/reference/subjects'), {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(response.status).toBe(200);
  });
});

describe('a scope taken from a client is taken from the tokens it already holds', () => {
  it('a first-party client no longer allowed roles: its token loses the user’s authority at once', async () => {
    const { client, tokens } = await superAdminSignsIn({ firstParty: true, scope: 'openid roles' });
    await updateClient(service.service.db, client.clientId, { scopes: ['openid', 'profile'] }, new Date());
    expect(await managementCalls(tokens.access_token)).toMatchObject(refusedEverywhere);
  });

  it('a service client no longer allowed a service scope: its token acts without it, introspection says so', async () => {
    const { db } = service.service;
    const { client, clientSecret } = await createServiceClient(db, [
      'service:platform.feature-flags.read',
      'service:platform.i18n.read',
    ]);
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const { access_token } = await oidc.clientCredentialsGrant(config);
    const flags = () =>
      fetch(service.url('/api/v2/platform/feature-flags'), {
        headers: { authorization: `Bearer ${access_token}` },
      }).then((response) => response.status);
    expect(await flags()).toBe(200);
    await updateClient(db, client.clientId, { scopes: ['service:platform.i18n.read'] }, new Date());
    expect(await flags()).toBe(403);
    const caller = { clientId: client.clientId, secret: clientSecret! };
    expect(await introspectAs(service, caller, access_token)).toMatchObject({
      active: true,
      scope: 'service:platform.i18n.read',
    });
  });
  it('a client no longer allowed email or roles: the id_token of its next refresh carries neither', async () => {
    const { client, config, tokens } = await superAdminSignsIn({
      firstParty: false,
      scope: 'openid email roles',
    });
    expect(tokens.claims()).toMatchObject({ email_verified: true, global_roles: ['super_admin'] });
    await updateClient(service.service.db, client.clientId, { scopes: ['openid', 'profile'] }, new Date());
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.scope).toBe('openid');
    const claims = refreshed.claims()!;
    for (const claim of ['email', 'email_verified', 'global_roles', 'permissions']) {
      expect(claims).not.toHaveProperty(claim);
    }
  });
});

describe('first-party clients', () => {
  it('are marked by an administrator with the CLI (clients:create --first-party) and listed by clients:list', async () => {
    const context = { db: service.service.db, clock: systemClock };
    const input = clientsCreateCommand.parse!({
      name: 'Admin console',
      type: 'public',
      'redirect-uri': [callbackUri],
      scope: ['openid', 'roles'],
      'first-party': true,
    });
    const created = (await clientsCreateCommand.run(input as never, context)) as Record<string, unknown>;
    expect(created).toMatchObject({ name: 'Admin console', first_party: true });
    const plain = clientsCreateCommand.parse!({
      name: 'Partner app',
      type: 'public',
      'redirect-uri': [callbackUri],
      scope: ['openid'],
    });
    const partner = (await clientsCreateCommand.run(plain as never, context)) as Record<string, unknown>;
    expect(partner).toMatchObject({ first_party: false });

    const listed = (await clientsListCommand.run(undefined as never, context)) as Record<string, unknown>[];
    expect(listed.find((client) => client.client_id === created.client_id)).toMatchObject({
      first_party: true,
    });
    expect(listed.find((client) => client.client_id === partner.client_id)).toMatchObject({
      first_party: false,
    });
  });

  it('lose the mark with the CLI (clients:update --first-party false): their live tokens lose the user’s authority', async () => {
    const { db } = service.service;
    const { client, tokens } = await superAdminSignsIn({ firstParty: true, scope: 'openid roles' });
    expect(await managementCalls(tokens.access_token)).toMatchObject(allowedEverywhere);
    const before = (await db('oauth_clients').where({ client_id: client.clientId }).first()).updated_at;

    const demoted = await runCommand(
      ['clients:update', '--client-id', client.clientId, '--first-party', 'false'],
      async () => ({ db, clock: systemClock }),
    );
    expect(demoted.exitCode).toBe(0);
    expect(JSON.parse(demoted.stdout)).toMatchObject({ client_id: client.clientId, first_party: false });
    expect(await managementCalls(tokens.access_token)).toMatchObject(refusedEverywhere);
    // Other nodes read the change from updated_at (src/oidc/client-cache.ts); the change is audited.
    const row = await db('oauth_clients').where({ client_id: client.clientId }).first();
    expect(row.updated_at.getTime()).toBeGreaterThan(before.getTime());
    const [audit] = await db('audit_log')
      .where({ type: 'admin.oauth_client.updated' })
      .whereRaw(`details->>'clientId' = ?`, [client.clientId]);
    expect(audit.details).toMatchObject({ via: 'cli', fields: ['firstParty'] });

    const promoted = await runCommand(
      ['clients:update', '--client-id', client.clientId, '--first-party', 'true'],
      async () => ({ db, clock: systemClock }),
    );
    expect(JSON.parse(promoted.stdout)).toMatchObject({ first_party: true });
    expect(await managementCalls(tokens.access_token)).toMatchObject(allowedEverywhere);
  });

  it('a service client can’t be marked first-party: it acts by its service scopes only', async () => {
    const { client } = await createServiceClient(service.service.db, ['service:crm.aggregates.read']);
    const refused = await runCommand(
      ['clients:update', '--client-id', client.clientId, '--first-party', 'true'],
      async () => ({ db: service.service.db, clock: systemClock }),
    );
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('service scopes only');
  });

  it('are not created by POST /oauth/clients/register: what it registers is third-party', async () => {
    const user = await createTestUser(service.service.db, { roles: ['super_admin'] });
    const token = await mainAuthToken(service, user, await loadUserAccess(service.service.db, user.id));
    const response = await fetch(service.url('/oauth/clients/register'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        name: 'Self-declared',
        type: 'public',
        redirect_uris: [callbackUri],
        scopes: ['openid', 'roles'],
        first_party: true,
      }),
    });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ first_party: false });
  });
});
