import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerCall } from '../support/bearer-call.js';
import { createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { discover, oidc } from '../support/relying-party.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

// A person given identity.oauth_clients.manage (a delegated role, not super_admin) manages clients,
// but can't use a client to act with permissions they were not given.

let service: TestService;
/** Holds identity.oauth_clients.manage and nothing else. */
let managerToken: string;
/** Holds identity.oauth_clients.manage and crm.aggregates.read. */
let crmManagerToken: string;
let adminToken: string;

const finance = 'service:management.dashboards.read.finance';
const crm = 'service:crm.aggregates.read';

beforeAll(async () => {
  service = await startTestService();
  const { db } = service.service;
  const manager = await createTestUser(db);
  managerToken = await mainAuthToken(service, manager, { permissions: ['identity.oauth_clients.manage'] });
  const crmManager = await createTestUser(db);
  crmManagerToken = await mainAuthToken(service, crmManager, {
    permissions: ['identity.oauth_clients.manage', 'crm.aggregates.read'],
  });
  const admin = await createTestUser(db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

const call = (method: string, path: string, token: string, body?: unknown) =>
  bearerCall(service, method, path, token, body);

const serviceClientBody = (scopes: string[]) => ({
  name: `Reporting ${Math.random()}`,
  type: 'confidential',
  grant_types: ['client_credentials'],
  scopes,
});

const clientNamed = async (name: unknown) =>
  service.service
    .db('oauth_clients')
    .where({ name: String(name) })
    .first();

const storedClient = async (clientId: string) =>
  service.service.db('oauth_clients').where({ client_id: clientId }).first();

describe('a client manager gives clients only the permissions they hold', () => {
  it.each([
    ['POST /oauth/clients/register', '/oauth/clients/register'],
    ['POST /api/v2/admin/oauth-clients', '/api/v2/admin/oauth-clients'],
  ])('%s: a service scope the manager lacks is 403, and no client is made', async (_label, path) => {
    const body = serviceClientBody([crm, finance]);
    const refused = await call('POST', path, crmManagerToken, body);
    expect(refused).toMatchObject({
      status: 403,
      body: { error: 'forbidden', details: { scopes: [finance] } },
    });
    expect(String(refused.body.message)).toContain(finance);
    expect(await clientNamed(body.name)).toBeUndefined();

    const alone = await call('POST', path, managerToken, serviceClientBody([crm]));
    expect(alone).toMatchObject({ status: 403, body: { details: { scopes: [crm] } } });
  });

  it('a service scope the manager holds is given, and its token carries it', async () => {
    const created = await call('POST', '/oauth/clients/register', crmManagerToken, serviceClientBody([crm]));
    expect(created.status).toBe(201);
    const config = await discover(
      service.issuer,
      String(created.body.client_id),
      String(created.body.client_secret),
    );
    expect((await oidc.clientCredentialsGrant(config)).scope).toBe(crm);
  });

  it('a super administrator (*) gives any catalogue permission', async () => {
    const created = await call('POST', '/oauth/clients/register', adminToken, serviceClientBody([finance]));
    expect(created.status).toBe(201);
  });

  it('a change may keep scopes the manager lacks, but not add one', async () => {
    const { client } = await createServiceClient(service.service.db, [crm, finance]);
    const path = `/api/v2/admin/oauth-clients/${client.clientId}`;
    const added = await call('PATCH', path, managerToken, {
      scopes: [crm, finance, 'service:identity.users.manage'],
    });
    expect(added).toMatchObject({
      status: 403,
      body: { error: 'forbidden', details: { scopes: ['service:identity.users.manage'] } },
    });
    expect((await storedClient(client.clientId)).allowed_scopes).toEqual([crm, finance]);

    expect(await call('PATCH', path, managerToken, { name: 'Renamed' })).toMatchObject({ status: 200 });
    const narrowed = await call('PATCH', path, managerToken, { scopes: [crm] });
    expect(narrowed).toMatchObject({ status: 200, body: { allowed_scopes: [crm] } });
    // Given back after removal: that is adding it again.
    const readded = await call('PATCH', path, managerToken, { scopes: [crm, finance] });
    expect(readded).toMatchObject({ status: 403, body: { details: { scopes: [finance] } } });
  });

  it('rotating a service client’s secret needs every permission it carries', async () => {
    const { client } = await createServiceClient(service.service.db, [crm, finance]);
    const before = (await storedClient(client.clientId)).client_secret_hash;
    const path = `/api/v2/admin/oauth-clients/${client.clientId}/rotate-secret`;
    const refused = await call('POST', path, crmManagerToken);
    expect(refused).toMatchObject({ status: 403, body: { details: { scopes: [finance] } } });
    expect(refused.body).not.toHaveProperty('client_secret');
    expect((await storedClient(client.clientId)).client_secret_hash).toBe(before);
    expect((await call('POST', path, adminToken)).status).toBe(200);
  });
  it('enabling a disabled service client needs every permission it carries', async () => {
    const { client } = await createServiceClient(service.service.db, [crm, finance]);
    const path = `/api/v2/admin/oauth-clients/${client.clientId}`;
    // Disabling hands nobody anything: any client manager may.
    expect(await call('POST', `${path}/disable`, managerToken)).toMatchObject({ status: 200 });
    const refused = await call('POST', `${path}/enable`, crmManagerToken);
    expect(refused).toMatchObject({ status: 403, body: { details: { scopes: [finance] } } });
    expect(await storedClient(client.clientId)).toMatchObject({ is_active: false });
    expect(await call('POST', `${path}/enable`, adminToken)).toMatchObject({
      status: 200,
      body: { is_active: true },
    });
  });
});

describe('a first-party client is changed only with *', () => {
  it('refuses a client manager its redirect URIs, scopes, secret and enabling; disabling stays theirs', async () => {
    const { client } = await createTestClient(service.service.db, {
      name: 'Admin app',
      type: 'confidential',
      firstParty: true,
    });
    const path = `/api/v2/admin/oauth-clients/${client.clientId}`;
    const before = await storedClient(client.clientId);
    for (const body of [
      { redirect_uris: ['https://attacker.example/callback'] },
      { scopes: ['openid'] },
      { name: 'Renamed' },
    ]) {
      expect(await call('PATCH', path, managerToken, body)).toMatchObject({
        status: 403,
        body: { error: 'forbidden', details: { permission: '*' } },
      });
    }
    expect(await call('POST', `${path}/rotate-secret`, managerToken)).toMatchObject({
      status: 403,
      body: { error: 'forbidden', details: { permission: '*' } },
    });
    expect(await storedClient(client.clientId)).toEqual(before);

    expect(await call('POST', `${path}/disable`, managerToken)).toMatchObject({
      status: 200,
      body: { is_active: false },
    });
    // Enabled again, its secret would act with everyone's authority again: it may have leaked.
    expect(await call('POST', `${path}/enable`, managerToken)).toMatchObject({
      status: 403,
      body: { error: 'forbidden', details: { permission: '*' } },
    });
    expect(await storedClient(client.clientId)).toMatchObject({ is_active: false });
    expect(await call('POST', `${path}/enable`, adminToken)).toMatchObject({
      status: 200,
      body: { is_active: true },
    });
    const changed = await call('PATCH', path, adminToken, {
      redirect_uris: ['https://admin.example.com/callback'],
    });
    expect(changed).toMatchObject({
      status: 200,
      body: { redirect_uris: ['https://admin.example.com/callback'] },
    });
  });
});
