import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/command.js';
import { clientsCreateCommand } from '../../src/cli/commands/clients.js';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { callbackUri, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc } from '../support/relying-party.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
let adminToken: string;
let admin: Awaited<ReturnType<typeof createTestUser>>;
beforeAll(async () => {
  service = await startTestService();
  admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

async function register(body: unknown, token = adminToken) {
  const response = await fetch(service.url('/oauth/clients/register'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const clientCount = async () => (await service.service.db('oauth_clients').select('id')).length;

describe('POST /oauth/clients/register', () => {
  it('takes RFC 7591 metadata from a relying-party library’s dynamic registration', async () => {
    const registered = await oidc.dynamicClientRegistration(
      new URL(service.issuer),
      {
        client_name: 'Registered by openid-client',
        redirect_uris: [callbackUri],
        response_types: ['code'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'none',
        scope: 'openid email',
      },
      oidc.None(),
      { initialAccessToken: adminToken, execute: [oidc.allowInsecureRequests] },
    );
    const metadata = registered.clientMetadata();
    // Audited as a creation through the admin API is, with the administrator's id.
    const audited = await listAuditEvents(service.service.db, { userId: admin.id, limit: 50 });
    expect(
      audited.map((event) => [event.type, event.details.clientId, event.details.endpoint]),
    ).toContainEqual(['admin.oauth_client.created', metadata.client_id, 'registration']);
    expect(metadata).toMatchObject({
      client_name: 'Registered by openid-client',
      token_endpoint_auth_method: 'none',
      scope: 'openid email',
      response_types: ['code'],
      client_id_issued_at: expect.any(Number),
    });
    const user = await createTestUser(service.service.db);
    const { tokens } = await completeAuthorization(registered, new HttpBrowser(service.issuer), {
      identifier: user.email!,
      password: user.password,
      parameters: { scope: 'openid email' },
    });
    expect(tokens.claims()?.email).toBe(user.email);
  });

  it('RFC 7591: a secret method makes a confidential client, whose secret never expires', async () => {
    const answer = await register({
      client_name: 'RFC 7591 backend',
      redirect_uris: [callbackUri],
      scope: 'openid',
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({
      type: 'confidential',
      token_endpoint_auth_method: 'client_secret_basic',
      client_secret: expect.any(String),
      client_secret_expires_at: 0,
    });
    const conflicting = await register({
      name: 'Conflicting',
      type: 'public',
      token_endpoint_auth_method: 'client_secret_basic',
      redirect_uris: [callbackUri],
      scopes: ['openid'],
    });
    expect(conflicting.status).toBe(400);
    expect(conflicting.body).toMatchObject({
      error: 'invalid_client_metadata',
      details: [{ path: 'token_endpoint_auth_method' }],
    });
    const implicit = await register({
      client_name: 'Implicit',
      redirect_uris: [callbackUri],
      scope: 'openid',
      response_types: ['token'],
    });
    expect(implicit.status).toBe(400);
    expect(implicit.body).toMatchObject({ error: 'invalid_client_metadata' });
  });

  it('registers from redirect_uris alone (RFC 7591 §2): a confidential client for openid, named by its host', async () => {
    const answer = await register({ redirect_uris: [callbackUri] });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({
      client_name: new URL(callbackUri).host,
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'openid',
      client_secret: expect.any(String),
    });
  });

  it('registers a public client usable at once through discovery', async () => {
    const answer = await register({
      name: 'Registered SPA',
      type: 'public',
      redirect_uris: [callbackUri],
      scopes: ['openid', 'email'],
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({
      name: 'Registered SPA',
      type: 'public',
      allowed_scopes: ['openid', 'email'],
      grant_types: ['authorization_code', 'refresh_token'],
      is_active: true,
    });
    expect(answer.body).not.toHaveProperty('client_secret');
    const user = await createTestUser(service.service.db);
    const config = await discover(service.issuer, String(answer.body.client_id));
    const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
      identifier: user.email!,
      password: user.password,
      parameters: { scope: 'openid email' },
    });
    expect(tokens.claims()?.email).toBe(user.email);
  });

  it('shows a confidential client’s secret once, and stores only its hash', async () => {
    const answer = await register({
      name: 'Backend',
      type: 'confidential',
      redirect_uris: ['https://backend.example.com/callback'],
      scopes: ['openid'],
    });
    expect(answer.status).toBe(201);
    const secret = String(answer.body.client_secret);
    expect(secret.length).toBeGreaterThanOrEqual(43);
    const [row] = await service.service.db('oauth_clients').where({ client_id: answer.body.client_id });
    expect(JSON.stringify(row)).not.toContain(secret);
  });

  it('registers a service client that gets client-credentials tokens', async () => {
    const answer = await register({
      name: 'CRM reader',
      type: 'confidential',
      grant_types: ['client_credentials'],
      scopes: ['service:crm.aggregates.read'],
    });
    expect(answer.status).toBe(201);
    const config = await discover(
      service.issuer,
      String(answer.body.client_id),
      String(answer.body.client_secret),
    );
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(tokens.scope).toBe('service:crm.aggregates.read');
  });

  it.each([
    [
      'a public client_credentials client',
      {
        name: 'x',
        type: 'public',
        grant_types: ['client_credentials'],
        scopes: ['service:crm.aggregates.read'],
      },
      'type',
    ],
    [
      'a service client with redirect URIs',
      {
        name: 'x',
        type: 'confidential',
        grant_types: ['client_credentials'],
        redirect_uris: [callbackUri],
        scopes: ['service:crm.aggregates.read'],
      },
      'redirect_uris',
    ],
    [
      'a free-form service scope',
      { name: 'x', type: 'confidential', grant_types: ['client_credentials'], scopes: ['service:whatever'] },
      'scopes.0',
    ],
    [
      'a service scope outside the catalogue',
      {
        name: 'x',
        type: 'confidential',
        grant_types: ['client_credentials'],
        scopes: ['service:crm.nothing.read'],
      },
      undefined,
    ],
    [
      'service scopes on a user-flow client',
      {
        name: 'x',
        type: 'public',
        redirect_uris: [callbackUri],
        scopes: ['openid', 'service:crm.aggregates.read'],
      },
      'scopes',
    ],
    ['no redirect URI for the code flow', { name: 'x', type: 'public', scopes: ['openid'] }, 'redirect_uris'],
    [
      'an unknown scope',
      { name: 'x', type: 'public', redirect_uris: [callbackUri], scopes: ['openid', 'admin'] },
      'scopes.1',
    ],
    [
      'an empty name',
      { name: ' ', type: 'public', redirect_uris: [callbackUri], scopes: ['openid'] },
      'name',
    ],
  ])('refuses %s with 400 invalid_client_metadata and writes nothing', async (_label, body, path) => {
    const before = await clientCount();
    const answer = await register(body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_client_metadata');
    // RFC 7591 §3.2.2's field, for a library that reads only that.
    expect(answer.body.error_description).toContain(answer.body.message);
    if (path)
      expect((answer.body.details as { path: string }[]).map((detail) => detail.path)).toContain(path);
    expect(await clientCount()).toBe(before);
  });

  // A name is shown to people on the sign-in, consent and logout pages: characters that reorder or
  // hide what is around them would let a client pass for another ("\u202Eelgoog" reads "google").
  it.each([
    ['a right-to-left override', 'Good\u202Eevil'],
    ['a left-to-right embedding', '\u202AEvil'],
    ['a right-to-left isolate', 'Evil\u2067app\u2069'],
    ['a right-to-left mark', 'Evil\u200Fapp'],
    ['an Arabic letter mark', 'Evil\u061Capp'],
    ['a new line', 'Good app\nwants nothing'],
    ['a tab', 'Good\tapp'],
    ['a C1 control', 'Good\u0085app'],
    ['a line separator', 'Good\u2028app'],
  ])(
    'refuses a name with %s: 400 invalid_client_metadata naming it, nothing written',
    async (_label, name) => {
      const before = await clientCount();
      const answer = await register({
        client_name: name,
        token_endpoint_auth_method: 'none',
        redirect_uris: [callbackUri],
      });
      expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_client_metadata' } });
      expect(answer.body.error_description).toContain('name: must not contain control characters');
      expect((answer.body.details as { path: string }[]).map((detail) => detail.path)).toEqual(['name']);
      expect(await clientCount()).toBe(before);
    },
  );

  it.each([
    [
      'credentials in the URI (userinfo)',
      { redirect_uris: ['https://user:pw@a.example/cb'] },
      'redirect_uris.0',
    ],
    ['a user name in the URI', { redirect_uris: ['https://user@a.example/cb'] }, 'redirect_uris.0'],
    ['an empty userinfo', { redirect_uris: ['https://@a.example/cb'] }, 'redirect_uris.0'],
    ['a wildcard host', { redirect_uris: ['https://*.example.com/cb'] }, 'redirect_uris.0'],
    ['a wildcard in the path', { redirect_uris: ['https://a.example.com/*'] }, 'redirect_uris.0'],
    ['a wildcard in the query', { redirect_uris: ['https://a.example.com/cb?next=*'] }, 'redirect_uris.0'],
    [
      'a wildcard port on loopback',
      { redirect_uris: [callbackUri, 'http://localhost:*/cb'] },
      'redirect_uris.1',
    ],
    ['a fragment', { redirect_uris: ['https://app.example.com/cb#x'] }, 'redirect_uris.0'],
    ['plain http off loopback', { redirect_uris: ['http://app.example.com/cb'] }, 'redirect_uris.0'],
    ['a relative URI', { redirect_uris: ['/cb'] }, 'redirect_uris.0'],
    ['white space', { redirect_uris: ['https://app.example.com/c b'] }, 'redirect_uris.0'],
    ['a backslash', { redirect_uris: ['https://app.example.com\\@evil.example/cb'] }, 'redirect_uris.0'],
    [
      'a wildcard in a native app’s private-use scheme URI',
      { redirect_uris: ['com.example.app:/*'] },
      'redirect_uris.0',
    ],
    [
      'credentials in a post-logout redirect URI',
      { redirect_uris: [callbackUri], post_logout_redirect_uris: ['https://user:pw@a.example/'] },
      'post_logout_redirect_uris.0',
    ],
    [
      'a wildcard post-logout redirect URI',
      { redirect_uris: [callbackUri], post_logout_redirect_uris: ['https://*.example.com/'] },
      'post_logout_redirect_uris.0',
    ],
    // Each fine alone, but the engine could never load the client (every authorization failed).
    [
      'a private-use scheme beside https on localhost (a web app)',
      { redirect_uris: ['https://localhost/cb', 'com.example.app:/cb'] },
      'redirect_uris.1',
    ],
    [
      'a web app’s post-logout URI of a private-use scheme',
      { redirect_uris: ['https://app.example.com/cb'], post_logout_redirect_uris: ['com.example.app:/bye'] },
      'post_logout_redirect_uris.0',
    ],
    [
      'a native app’s post-logout URI of https on localhost',
      { redirect_uris: ['com.example.app:/cb'], post_logout_redirect_uris: ['https://localhost/bye'] },
      'post_logout_redirect_uris.0',
    ],
  ])('refuses %s with 400 invalid_redirect_uri (RFC 7591) and writes nothing', async (_label, uris, path) => {
    const before = await clientCount();
    const answer = await register({ name: 'x', type: 'public', scopes: ['openid'], ...uris });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: 'invalid_redirect_uri', message: expect.any(String) });
    // RFC 7591 §3.2.2's field, naming the refused URI's place.
    expect(answer.body.error_description).toContain(path);
    expect((answer.body.details as { path: string }[]).map((detail) => detail.path)).toContain(path);
    expect(await clientCount()).toBe(before);
  });

  it.each([
    ['--redirect-uri', 'https://user:pw@a.example/cb'],
    ['--redirect-uri', 'https://*.example.com/cb'],
    ['--post-logout-redirect-uri', 'https://*.example.com/'],
  ])('the CLI (clients:create) refuses %s %s with the same rule', (flag, uri) => {
    const values: Record<string, string[] | string> = {
      name: 'x',
      type: 'public',
      scope: ['openid'],
      'redirect-uri': [callbackUri],
    };
    values[flag.slice(2)] = [uri];
    expect(() => clientsCreateCommand.parse!(values)).toThrow(UsageError);
    expect(() => clientsCreateCommand.parse!(values)).toThrow(flag.slice(2));
  });

  it.each([
    ['Hebrew', 'אפליקציה 2'],
    ['Arabic with a zero-width non-joiner', 'تطبيق\u200Cنا'],
    ['an emoji sequence (zero-width joiner)', 'Family \u{1F468}\u200D\u{1F469}\u200D\u{1F467} app'],
  ])('accepts a name in %s', async (_label, name) => {
    const answer = await register({ name, type: 'public', redirect_uris: [callbackUri], scopes: ['openid'] });
    expect(answer).toMatchObject({ status: 201, body: { name, client_name: name } });
  });

  it('the CLI (clients:create) refuses a name with a right-to-left override', () => {
    const values = {
      name: 'Good\u202Eevil',
      type: 'public',
      scope: ['openid'],
      'redirect-uri': [callbackUri],
    };
    expect(() => clientsCreateCommand.parse!(values)).toThrow(UsageError);
    expect(() => clientsCreateCommand.parse!(values)).toThrow('name');
  });

  it.each([
    ['https', 'https://app.example.com/callback?tenant=1'],
    ['http on 127.0.0.1 with a port', 'http://127.0.0.1:8123/callback'],
    ['http on [::1]', 'http://[::1]:8123/callback'],
    ['http on localhost', 'http://localhost/callback'],
    ['a native app’s private-use scheme (RFC 8252 §7.1)', 'com.example.app:/oauth2redirect'],
  ])('accepts a redirect URI with %s', async (_label, uri) => {
    const answer = await register({ name: 'x', type: 'public', redirect_uris: [uri], scopes: ['openid'] });
    expect(answer.status).toBe(201);
    expect(answer.body.redirect_uris).toEqual([uri]);
  });

  it.each([
    ['malformed JSON', '{"name": ', 'invalid_json'],
    [
      'an unknown type',
      JSON.stringify({ name: 'x', type: 'admin', scopes: ['openid'] }),
      'invalid_client_metadata',
    ],
  ])('refuses %s with 400', async (_label, body, error) => {
    const answer = await register(body);
    expect(answer).toMatchObject({ status: 400, body: { error } });
  });

  it('needs the permission identity.oauth_clients.manage (403 without it)', async () => {
    const user = await createTestUser(service.service.db);
    const answer = await register(
      { name: 'x', type: 'public', redirect_uris: [callbackUri], scopes: ['openid'] },
      await mainAuthToken(service, user),
    );
    expect(answer).toMatchObject({ status: 403, body: { error: 'forbidden' } });
  });

  it('needs a recent sign-in: 401 reauthentication_required after 5 minutes', async () => {
    const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
    const stale = await mainAuthToken(service, admin, {
      permissions: ['*'],
      authTime: new Date(Date.now() - 6 * 60 * 1000),
    });
    const answer = await register(
      { name: 'x', type: 'public', redirect_uris: [callbackUri], scopes: ['openid'] },
      stale,
    );
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error: 'reauthentication_required' });
    expect(String(answer.body.message)).toMatch(/Sign in again/);
  });

  it('needs an access token', async () => {
    const answer = await register({ name: 'x' }, 'garbage');
    expect(answer).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
  });
});
