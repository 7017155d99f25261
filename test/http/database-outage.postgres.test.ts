import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase } from '../support/database.js';
import { createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, signInThroughPages } from '../support/relying-party.js';
import { mainAuthToken, userWithTokens } from '../support/sign-in.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestService, type TestService } from '../support/test-service.js';

// The service reaches its own PostgreSQL database through a proxy the tests cut and restore; the
// server itself, shared with the other test files, is never touched.
let database: DatabaseHandle & { url?: string };
let proxy: TcpProxy;
let throughProxy: DatabaseHandle;
let service: TestService;

const timeoutMs = 1_000;

beforeAll(async () => {
  database = await createTestDatabase();
  proxy = await TcpProxy.start(database.url!);
  throughProxy = await openDatabase({
    databaseUrl: proxy.proxied(database.url!),
    poolMax: 5,
    timeoutMs,
    logger: createLogger('silent'),
  });
  service = await startTestService({ database: throughProxy });
});
afterEach(() => proxy.restore());
afterAll(async () => {
  await service?.close();
  await throughProxy?.close();
  await proxy?.close();
  await database?.close();
});

/** Any request, bounded: a test fails on a hang instead of waiting for the suite's timeout. */
function request(path: string | URL, init: RequestInit = {}): Promise<Response> {
  const url = typeof path === 'string' ? service.url(path) : path;
  return fetch(url, { signal: AbortSignal.timeout(15_000), ...init });
}

async function expectOAuthUnavailable(response: Response): Promise<void> {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(response.headers.get('content-type')).toContain('application/json');
  expect(await response.json()).toEqual({
    error: 'temporarily_unavailable',
    error_description: expect.any(String),
    request_id: response.headers.get('x-request-id'),
  });
}

async function expectApiUnavailable(response: Response): Promise<void> {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(await response.json()).toEqual({
    error: 'service_unavailable',
    message: expect.any(String),
    request_id: response.headers.get('x-request-id'),
  });
}

async function expectPageUnavailable(response: Response): Promise<void> {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(response.headers.get('content-type')).toContain('text/html');
  expect(await response.text()).toContain('data-testid="error-code"');
}

/** Asks until the answer is not 503; returns it and how long that took. */
async function untilAvailable(ask: () => Promise<Response>): Promise<{ response: Response; ms: number }> {
  const started = Date.now();
  for (;;) {
    const response = await ask();
    if (response.status !== 503 || Date.now() - started > 20_000) {
      return { response, ms: Date.now() - started };
    }
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function serviceClientCredentials() {
  const { client, clientSecret } = await createServiceClient(database.db, ['service:crm.aggregates.read']);
  const basic = Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64');
  return () =>
    request('/oauth/token', {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
}

describe('PostgreSQL away: 503 with Retry-After in each endpoint’s own error shape', () => {
  it('POST /oauth/token answers the RFC 6749 JSON error, then tokens again once the database is back', async () => {
    const token = await serviceClientCredentials();
    expect((await token()).status).toBe(200);
    proxy.cut();
    await expectOAuthUnavailable(await token());
    await proxy.restore();
    const { response, ms } = await untilAvailable(token);
    expect(response.status).toBe(200);
    expect(ms).toBeLessThan(5_000);
  });

  it('POST /oauth/token: the database lost while the engine redeems the code is a 503 too, not its server_error', async () => {
    const user = await createTestUser(database.db);
    const { client } = await createTestClient(database.db);
    const config = await discover(service.issuer, client.clientId);
    const authorization = await buildAuthorizationRequest(config);
    const page = await signInThroughPages(new HttpBrowser(service.issuer), authorization.url, {
      identifier: user.email!,
      password: user.password,
    });
    const callback = new URL(page.url);
    proxy.cutWhenClientSends('authorization_codes');
    const response = await request('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: client.clientId,
        code: callback.searchParams.get('code')!,
        code_verifier: authorization.codeVerifier,
        redirect_uri: callback.origin + callback.pathname,
      }),
    });
    await expectOAuthUnavailable(response);
  });

  it('POST /oauth/introspect, POST /oauth/revoke and GET /oauth/userinfo answer the RFC 6749 JSON error', async () => {
    const { tokens, client, clientSecret } = await userWithTokens(service, 'confidential');
    const basic = Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64');
    const form = {
      authorization: `Basic ${basic}`,
      'content-type': 'application/x-www-form-urlencoded',
    };
    proxy.cut();
    await expectOAuthUnavailable(
      await request('/oauth/introspect', {
        method: 'POST',
        headers: form,
        body: new URLSearchParams({ token: tokens.refresh_token! }),
      }),
    );
    await expectOAuthUnavailable(
      await request('/oauth/revoke', {
        method: 'POST',
        headers: form,
        body: new URLSearchParams({ token: tokens.refresh_token!, token_type_hint: 'refresh_token' }),
      }),
    );
    await expectOAuthUnavailable(
      await request('/oauth/userinfo', { headers: { authorization: `Bearer ${tokens.access_token}` } }),
    );
  });

  it('GET /oauth/authorize answers the error page, also when the engine itself loses the database', async () => {
    const { client } = await createTestClient(database.db);
    const config = await discover(service.issuer, client.clientId);
    const html = { accept: 'text/html' };
    proxy.cut();
    await expectPageUnavailable(
      await request((await buildAuthorizationRequest(config)).url, { headers: html }),
    );
    await proxy.restore();

    // The rate limit passes; the engine fails saving the interaction (its renderError).
    proxy.cutWhenClientSends('oidc_payloads');
    await expectPageUnavailable(
      await request((await buildAuthorizationRequest(config)).url, { headers: html }),
    );
    await proxy.restore();
    const { response, ms } = await untilAvailable(async () =>
      request((await buildAuthorizationRequest(config)).url, { headers: html, redirect: 'manual' }),
    );
    expect(response.status).toBe(303);
    expect(ms).toBeLessThan(5_000);
  });

  it('the sign-in pages and /:lang/reset-password answer the error page', async () => {
    const { client } = await createTestClient(database.db);
    const config = await discover(service.issuer, client.clientId);
    const browser = new HttpBrowser(service.issuer);
    const signIn = await browser.navigate((await buildAuthorizationRequest(config)).url.href);
    expect(signIn.html).toContain('name="identifier"');
    proxy.cut();
    await expectPageUnavailable(
      await request(new URL(signIn.url).pathname, {
        headers: { cookie: browser.cookieHeader(new URL(signIn.url)) },
      }),
    );
    await expectPageUnavailable(
      await request('/en/reset-password/request', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'identifier=someone%40example.com',
      }),
    );
  });

  it('the identity and platform JSON APIs answer their JSON error', async () => {
    const user = await createTestUser(database.db);
    const token = await mainAuthToken(service, user, { permissions: ['platform.reference-data.manage'] });
    proxy.cut();
    await expectApiUnavailable(
      await request('/api/v2/identity/auth/flow/start', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ flow: 'login' }),
      }),
    );
    await expectApiUnavailable(
      await request('/api/v2/identity/auth/me', { headers: { authorization: `Bearer ${token}` } }),
    );
    await expectApiUnavailable(
      await request('/api/v2/platform/reference/subjects', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ key: 'outage_subject', title: { en: 'Outage' } }),
      }),
    );
  });
});

describe('bounded waits', () => {
  it('a database that accepts connections but never answers costs a bounded wait, then a 503', async () => {
    const user = await createTestUser(database.db);
    const token = await mainAuthToken(service, user);
    proxy.stall();
    const started = Date.now();
    const response = await request('/api/v2/identity/auth/me', {
      headers: { authorization: `Bearer ${token}` },
    });
    await expectApiUnavailable(response);
    expect(Date.now() - started).toBeLessThan(timeoutMs + 2_000);
    await proxy.restore();
    const { response: after, ms } = await untilAvailable(() =>
      request('/api/v2/identity/auth/me', { headers: { authorization: `Bearer ${token}` } }),
    );
    expect(after.status).toBe(200);
    expect(ms).toBeLessThan(5_000);
  });
  it('rate-limited endpoints too: their counters connect with the same bounded wait', async () => {
    const startFlow = () =>
      request('/api/v2/identity/auth/flow/start', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ flow: 'login' }),
      });
    proxy.stall();
    const started = Date.now();
    await expectApiUnavailable(await startFlow());
    expect(Date.now() - started).toBeLessThan(timeoutMs + 2_000);
    await proxy.restore();
    const { response: after } = await untilAvailable(startFlow);
    expect(after.status).toBe(200);
  });
});

describe('PostgreSQL restarted under load', () => {
  it('every answer while it is away is a 503 with Retry-After (never a 500), and the service recovers by itself', async () => {
    const user = await createTestUser(database.db);
    const token = await mainAuthToken(service, user);
    const { tokens } = await userWithTokens(service);
    const asks: (() => Promise<Response>)[] = [
      () => request('/api/v2/identity/auth/me', { headers: { authorization: `Bearer ${token}` } }),
      () => request('/oauth/userinfo', { headers: { authorization: `Bearer ${tokens.access_token}` } }),
      () => request('/api/v2/identity/auth/flow/config'),
    ];
    const answers: { status: number; retryAfter: string | null; askedAt: number }[] = [];
    let running = true;
    const load = Array.from({ length: 6 }, async (_unused, index) => {
      while (running) {
        const askedAt = Date.now();
        const response = await asks[index % asks.length]!();
        await response.body?.cancel();
        answers.push({ status: response.status, retryAfter: response.headers.get('retry-after'), askedAt });
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await proxy.restore();
    const restoredAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    running = false;
    await Promise.all(load);

    expect(answers.filter((answer) => answer.status === 503).length).toBeGreaterThan(0);
    for (const answer of answers) {
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 503) expect(answer.retryAfter).toMatch(/^\d+$/);
    }
    // Asked a second after the database's return, every request succeeds again.
    const settled = answers.filter((answer) => answer.askedAt > restoredAt + 1_000);
    expect(settled.length).toBeGreaterThan(0);
    expect(settled.every((answer) => answer.status === 200)).toBe(true);
  });

  it('pool connections the server closes (as a restart does) are replaced: the next requests succeed', async () => {
    const user = await createTestUser(database.db);
    const token = await mainAuthToken(service, user);
    const me = () => request('/api/v2/identity/auth/me', { headers: { authorization: `Bearer ${token}` } });
    // Fill the pool with connections of the service.
    await Promise.all(Array.from({ length: 5 }, () => me().then((response) => response.body?.cancel())));
    const terminated = await database.db.raw(
      `select pg_terminate_backend(pid) as ended from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and application_name = 'identity-service'`,
    );
    expect(terminated.rows.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let attempt = 0; attempt < 5; attempt++) expect((await me()).status).toBe(200);
  });
});
