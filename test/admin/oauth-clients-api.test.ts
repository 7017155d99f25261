import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import {
  callbackUri,
  createdInOrder,
  createServiceClient,
  createTestClient,
  createTestUser,
} from '../support/fixtures.js';
import { bearerCall } from '../support/bearer-call.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc } from '../support/relying-party.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
let admin: { id: string };
let adminToken: string;
/** A resource server: a service client, which may introspect every client's access tokens. */
let resourceServer: { clientId: string; secret: string };

beforeAll(async () => {
  service = await startTestService();
  const { db } = service.service;
  admin = await createTestUser(db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
  const { client, clientSecret } = await createServiceClient(db, ['service:crm.aggregates.read']);
  resourceServer = { clientId: client.clientId, secret: clientSecret! };
});
afterAll(() => service?.close());

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(method: string, path: string, body?: unknown, token = adminToken): Promise<Answer> {
  const { status, body: answer } = await bearerCall(service, method, `/api/v2/admin${path}`, token, body);
  return { status, body: answer };
}

async function introspect(token: string): Promise<Record<string, unknown>> {
  const response = await fetch(service.url('/oauth/introspect'), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${resourceServer.clientId}:${resourceServer.secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** A service client through the admin API, with a way to ask for a client-credentials token. */
async function serviceClient(name = 'Reporting') {
  const created = await call('POST', '/oauth-clients', {
    name,
    type: 'confidential',
    grant_types: ['client_credentials'],
    scopes: ['service:crm.aggregates.read'],
  });
  expect(created.status).toBe(201);
  const clientId = String(created.body.client_id);
  const tokenWith = async (secret: string) =>
    oidc.clientCredentialsGrant(await discover(service.issuer, clientId, secret));
  return { clientId, secret: String(created.body.client_secret), tokenWith };
}

/** The token endpoint refuses the client (openid-client reports RFC 6749's error in the challenge). */
async function expectInvalidClient(attempt: Promise<unknown>) {
  const refusal = await attempt.then(
    () => undefined,
    (error: unknown) => error as { status?: number; cause?: unknown; error?: string },
  );
  expect(refusal?.status).toBe(401);
  expect(JSON.stringify(refusal?.cause ?? refusal?.error)).toContain('invalid_client');
}

const auditTypes = async () =>
  (await listAuditEvents(service.service.db, { userId: admin.id, limit: 50 })).map((event) => ({
    type: event.type,
    clientId: event.details.clientId,
  }));

describe('admin API: OAuth clients', () => {
  it('lists clients newest first, a page at a time, filtered by status and search', async () => {
    const { db } = service.service;
    const marker = `Paged-${Date.now()}`;
    const created = [];
    for (let index = 0; index < 3; index += 1) {
      created.push((await createTestClient(db, { name: `${marker} ${index}` })).client.clientId);
    }
    await createdInOrder(
      db,
      'oauth_clients',
      created.map((clientId) => ({ client_id: clientId })),
    );
    const first = await call('GET', `/oauth-clients?search=${marker}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ total: 3, limit: 2, offset: 0 });
    const names = (page: Answer) => (page.body.clients as { name: string }[]).map((client) => client.name);
    expect(names(first)).toEqual([`${marker} 2`, `${marker} 1`]);
    const second = await call('GET', `/oauth-clients?search=${marker}&limit=2&offset=2`);
    expect(names(second)).toEqual([`${marker} 0`]);
    expect(JSON.stringify(first.body)).not.toMatch(/secret/);

    await call('POST', `/oauth-clients/${created[0]}/disable`);
    const disabled = await call('GET', `/oauth-clients?search=${marker}&status=disabled`);
    expect(names(disabled)).toEqual([`${marker} 0`]);
  });

  it.each([
    ['a limit over 100', '?limit=500', 'query.limit'],
    ['a negative offset', '?offset=-1', 'query.offset'],
    ['an unknown status', '?status=gone', 'query.status'],
  ])('refuses %s with 400 naming the parameter', async (_label, query, path) => {
    const answer = await call('GET', `/oauth-clients${query}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: 'invalid_request', details: [{ path }] });
  });

  it('gets one client, and answers 404 for an unknown one', async () => {
    const { client } = await createTestClient(service.service.db, { name: 'Lookup' });
    const found = await call('GET', `/oauth-clients/${client.clientId}`);
    expect(found).toMatchObject({ status: 200, body: { client_id: client.clientId, name: 'Lookup' } });
    const missing = await call('GET', '/oauth-clients/no-such-client');
    expect(missing).toMatchObject({ status: 404, body: { error: 'not_found' } });
  });

  it('updates a client by the registration rules; a refused change writes nothing', async () => {
    const { client } = await createTestClient(service.service.db, { name: 'Before' });
    const updated = await call('PATCH', `/oauth-clients/${client.clientId}`, {
      name: 'After',
      redirect_uris: ['https://app.example.com/callback'],
      scopes: ['openid', 'email'],
    });
    expect(updated).toMatchObject({
      status: 200,
      body: {
        name: 'After',
        redirect_uris: ['https://app.example.com/callback'],
        allowed_scopes: ['openid', 'email'],
      },
    });
    const refused = await call('PATCH', `/oauth-clients/${client.clientId}`, {
      name: 'Refused',
      redirect_uris: ['https://*.example.com/cb'],
    });
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    const service_scope = await call('PATCH', `/oauth-clients/${client.clientId}`, {
      scopes: ['openid', 'service:crm.aggregates.read'],
    });
    expect(service_scope).toMatchObject({ status: 400, body: { error: 'invalid_client_metadata' } });
    const bidiName = await call('PATCH', `/oauth-clients/${client.clientId}`, { name: 'Good\u202Eevil' });
    expect(bidiName).toMatchObject({
      status: 400,
      body: { error: 'invalid_client_metadata', details: [{ path: 'name' }] },
    });
    const unknownField = await call('PATCH', `/oauth-clients/${client.clientId}`, { type: 'confidential' });
    expect(unknownField.status).toBe(400);
    expect((await call('GET', `/oauth-clients/${client.clientId}`)).body).toMatchObject({
      name: 'After',
      redirect_uris: ['https://app.example.com/callback'],
    });
  });

  it('a disabled client gets no tokens and its access tokens fail introspection; enabled, it works again', async () => {
    const reporting = await serviceClient();
    const before = await reporting.tokenWith(reporting.secret);
    expect(await introspect(before.access_token)).toMatchObject({ active: true });

    const disabled = await call('POST', `/oauth-clients/${reporting.clientId}/disable`);
    expect(disabled).toMatchObject({ status: 200, body: { is_active: false } });
    expect(await introspect(before.access_token)).toEqual({ active: false });
    await expectInvalidClient(reporting.tokenWith(reporting.secret));

    const enabled = await call('POST', `/oauth-clients/${reporting.clientId}/enable`);
    expect(enabled).toMatchObject({ status: 200, body: { is_active: true } });
    const after = await reporting.tokenWith(reporting.secret);
    expect(await introspect(after.access_token)).toMatchObject({ active: true });
    expect(await auditTypes()).toEqual(
      expect.arrayContaining([
        { type: 'admin.oauth_client.disabled', clientId: reporting.clientId },
        { type: 'admin.oauth_client.enabled', clientId: reporting.clientId },
      ]),
    );
  });

  it('enabling a disabled client does not bring back the tokens it held before', async () => {
    const reporting = await serviceClient();
    const serviceToken = await reporting.tokenWith(reporting.secret);
    const { db } = service.service;
    const user = await createTestUser(db);
    const { client: app } = await createTestClient(db, { name: 'Leaked app' });
    const appConfig = await discover(service.issuer, app.clientId);
    const { tokens: userTokens } = await completeAuthorization(appConfig, new HttpBrowser(service.issuer), {
      identifier: user.email!,
      password: user.password,
    });

    for (const clientId of [reporting.clientId, app.clientId]) {
      expect((await call('POST', `/oauth-clients/${clientId}/disable`)).status).toBe(200);
      expect((await call('POST', `/oauth-clients/${clientId}/enable`)).status).toBe(200);
    }

    expect(await introspect(serviceToken.access_token)).toEqual({ active: false });
    expect(await introspect(userTokens.access_token)).toEqual({ active: false });
    const userinfo = await fetch(service.url('/oauth/userinfo'), {
      headers: { authorization: `Bearer ${userTokens.access_token}` },
    });
    expect(userinfo.status).toBe(401);
    const refresh = await oidc.refreshTokenGrant(appConfig, userTokens.refresh_token!).then(
      () => undefined,
      (error: unknown) => error as { error?: string },
    );
    expect(refresh?.error).toBe('invalid_grant');
    // What it is given after being enabled works.
    const fresh = await reporting.tokenWith(reporting.secret);
    expect(await introspect(fresh.access_token)).toMatchObject({ active: true });
  });

  it('a scope taken from a client and given back does not come back to the tokens issued before', async () => {
    const reporting = await serviceClient();
    const path = `/oauth-clients/${reporting.clientId}`;
    const both = ['service:crm.aggregates.read', 'service:crm.teacher_payouts.read'];
    expect((await call('PATCH', path, { scopes: both })).status).toBe(200);
    const before = await reporting.tokenWith(reporting.secret);
    expect(await introspect(before.access_token)).toMatchObject({ active: true, scope: both.join(' ') });

    expect((await call('PATCH', path, { scopes: [both[0]] })).status).toBe(200);
    // Taken at once from the token it had been issued in.
    expect(await introspect(before.access_token)).toMatchObject({ active: true, scope: both[0] });
    // A token's iat has whole seconds: one issued in the second of the change counts as issued before.
    await new Promise((resolve) => setTimeout(resolve, 1005 - (Date.now() % 1000)));
    const between = await reporting.tokenWith(reporting.secret);

    expect((await call('PATCH', path, { scopes: both })).status).toBe(200);
    expect(await introspect(before.access_token)).toEqual({ active: false });
    // Issued without the scope, it stays as it was; a new token has both.
    expect(await introspect(between.access_token)).toMatchObject({ active: true, scope: both[0] });
    const after = await reporting.tokenWith(reporting.secret);
    expect(await introspect(after.access_token)).toMatchObject({ active: true, scope: both.join(' ') });
  });

  it('rotates a secret: shown once, the old one fails at once, the new one works', async () => {
    const reporting = await serviceClient();
    await reporting.tokenWith(reporting.secret);
    const rotated = await call('POST', `/oauth-clients/${reporting.clientId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const newSecret = String(rotated.body.client_secret);
    expect(newSecret).not.toBe(reporting.secret);
    await expectInvalidClient(reporting.tokenWith(reporting.secret));
    expect((await reporting.tokenWith(newSecret)).access_token).toEqual(expect.any(String));
    const [row] = await service.service.db('oauth_clients').where({ client_id: reporting.clientId });
    expect(JSON.stringify(row)).not.toContain(newSecret);
    expect((await call('GET', `/oauth-clients/${reporting.clientId}`)).body).not.toHaveProperty(
      'client_secret',
    );

    const { client: spa } = await createTestClient(service.service.db);
    const publicClient = await call('POST', `/oauth-clients/${spa.clientId}/rotate-secret`);
    expect(publicClient).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
  });

  it('deletes a client: gone, its tokens refused, audited with its name', async () => {
    const reporting = await serviceClient('Short-lived');
    const token = await reporting.tokenWith(reporting.secret);
    const deleted = await call('DELETE', `/oauth-clients/${reporting.clientId}`);
    expect(deleted.status).toBe(204);
    expect((await call('GET', `/oauth-clients/${reporting.clientId}`)).status).toBe(404);
    expect(await introspect(token.access_token)).toEqual({ active: false });
    await expectInvalidClient(reporting.tokenWith(reporting.secret));
    expect((await call('DELETE', `/oauth-clients/${reporting.clientId}`)).status).toBe(404);
    const [event] = await listAuditEvents(service.service.db, {
      type: 'admin.oauth_client.deleted',
      limit: 1,
    });
    expect(event).toMatchObject({
      userId: admin.id,
      details: { clientId: reporting.clientId, name: 'Short-lived' },
    });
  });

  it('refuses a user without identity.oauth_clients.manage with 403, changing nothing', async () => {
    const { client } = await createTestClient(service.service.db, { name: 'Untouched' });
    const user = await createTestUser(service.service.db);
    const token = await mainAuthToken(service, user);
    expect(await call('GET', '/oauth-clients', undefined, token)).toMatchObject({
      status: 403,
      body: { error: 'forbidden' },
    });
    expect((await call('POST', `/oauth-clients/${client.clientId}/disable`, undefined, token)).status).toBe(
      403,
    );
    expect((await call('GET', `/oauth-clients/${client.clientId}`)).body).toMatchObject({ is_active: true });
  });

  it('refuses an administrator’s token issued to a third-party application with 403', async () => {
    const { db } = service.service;
    const administrator = await createTestUser(db, { roles: ['super_admin'] });
    const { client } = await createTestClient(db, { name: 'Third party' });
    const { tokens } = await completeAuthorization(
      await discover(service.issuer, client.clientId),
      new HttpBrowser(service.issuer),
      {
        identifier: administrator.email!,
        password: administrator.password,
        parameters: { scope: 'openid roles' },
      },
    );
    const answer = await call('GET', '/oauth-clients', undefined, tokens.access_token);
    expect(answer).toMatchObject({ status: 403, body: { error: 'forbidden' } });
  });

  it('needs a recent authentication for sensitive changes, not for reading', async () => {
    const reporting = await serviceClient();
    const stale = await mainAuthToken(service, admin, {
      permissions: ['*'],
      authTime: new Date(Date.now() - 6 * 60 * 1000),
    });
    expect((await call('GET', `/oauth-clients/${reporting.clientId}`, undefined, stale)).status).toBe(200);
    for (const [method, path] of [
      ['POST', `/oauth-clients/${reporting.clientId}/rotate-secret`],
      ['POST', `/oauth-clients/${reporting.clientId}/disable`],
      ['DELETE', `/oauth-clients/${reporting.clientId}`],
    ] as const) {
      expect(await call(method, path, undefined, stale)).toMatchObject({
        status: 401,
        body: { error: 'reauthentication_required' },
      });
    }
    await reporting.tokenWith(reporting.secret);
  });

  it('needs an access token', async () => {
    expect(await call('GET', '/oauth-clients', undefined, 'garbage')).toMatchObject({
      status: 401,
      body: { error: 'unauthorized' },
    });
  });

  it('documents every operation, with its parameters, in the OpenAPI document', async () => {
    const response = await fetch(service.url('/api/v2/admin/openapi.json'));
    const document = (await response.json()) as {
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
    };
    expect(Object.keys(document.paths['/oauth-clients/{clientId}']!).sort()).toEqual([
      'delete',
      'get',
      'patch',
    ]);
    expect(document.paths['/oauth-clients/{clientId}/rotate-secret']!.post).toBeDefined();
    expect(document.paths['/oauth-clients']!.get!.parameters!.map((parameter) => parameter.name)).toEqual([
      'limit',
      'offset',
      'status',
      'search',
    ]);
  });

  it('registers a user-flow client usable at once through discovery', async () => {
    const created = await call('POST', '/oauth-clients', {
      name: 'Admin SPA',
      type: 'public',
      redirect_uris: [callbackUri],
      scopes: ['openid', 'email'],
    });
    expect(created).toMatchObject({ status: 201, body: { owner_id: admin.id, is_active: true } });
    expect(created.body).not.toHaveProperty('client_secret');
    const user = await createTestUser(service.service.db);
    const { tokens } = await completeAuthorization(
      await discover(service.issuer, String(created.body.client_id)),
      new HttpBrowser(service.issuer),
      { identifier: user.email!, password: user.password, parameters: { scope: 'openid email' } },
    );
    expect(tokens.claims()?.email).toBe(user.email);
  });
});
