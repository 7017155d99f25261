import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { mainAuthToken, userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import {
  expectApiError,
  expectNoServerFault,
  expectOAuthError,
  fuzzRuns,
  fuzzTimeoutMs,
  refusalCounters,
  rowCounts,
  send,
  type FuzzResponse,
} from './support/fuzz-http.js';
import {
  formBody,
  forwardedIp,
  headerText,
  hostileText,
  objectOf,
  rawJsonBody,
} from './support/generators.js';

// Generated inputs through the OAuth endpoints: never a 500 or a stack, RFC 6749's error shape for every
// refusal, and a refused request leaves every table as it was.
let service: TestService;
let publicClientId: string;
let confidential: { id: string; secret: string };
let serviceClient: { id: string; secret: string };
let accessToken: string;
let refreshToken: string;
let adminToken: string;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true', REAUTH_WINDOW_MINUTES: '60' } });
  const { db } = service.service;
  publicClientId = (await createTestClient(db)).client.clientId;
  const created = await createTestClient(db, { type: 'confidential' });
  confidential = { id: created.client.clientId, secret: created.clientSecret! };
  const machine = await createServiceClient(db, ['service:crm.aggregates.read']);
  serviceClient = { id: machine.client.clientId, secret: machine.clientSecret! };
  const signedIn = await userWithTokens(service, 'confidential');
  accessToken = signedIn.tokens.access_token;
  refreshToken = signedIn.tokens.refresh_token!;
  const admin = await createTestUser(db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
}, 120_000); // a service and its fixtures: slow on a loaded machine
afterAll(() => service?.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** Client authentication as sent: none, right, wrong, malformed. */
const clientAuthorization = () =>
  fc.oneof(
    fc.constant(undefined),
    fc.constant(basic(confidential.id, confidential.secret)),
    fc.constant(basic(serviceClient.id, serviceClient.secret)),
    fc.constant(basic(confidential.id, 'wrong-secret')),
    hostileText.map((text) => basic(text.replace(/[^\x20-\x7e]/g, ''), 'x')),
    headerText.map((text) => `Basic ${text}`),
    headerText,
  );

const contentType = fc.constantFrom(
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=utf-8',
  'application/json',
  'text/plain',
  'multipart/form-data; boundary=x',
);

/** Runs one property; refused inputs must have left the tables as they were. */
async function checkRefusalWritesNothing(
  request: () => Promise<FuzzResponse>,
  refused: (response: FuzzResponse) => boolean,
  ignored: readonly string[] = [],
): Promise<FuzzResponse> {
  const tablesIgnored = [...refusalCounters, ...ignored];
  const before = await rowCounts(service.service.db, tablesIgnored);
  const response = await request();
  if (refused(response)) expect(await rowCounts(service.service.db, tablesIgnored)).toEqual(before);
  return response;
}

describe('fuzzing the OAuth endpoints', () => {
  it(
    `POST /oauth/token: ${fuzzRuns} generated requests`,
    async () => {
      const body = formBody({
        grant_type: fc.constantFrom(
          'authorization_code',
          'refresh_token',
          'client_credentials',
          'password',
          'implicit',
        ),
        code: fc.oneof(fc.base64String({ maxLength: 60 }), fc.constant('')),
        code_verifier: fc.base64String({ minLength: 44, maxLength: 128 }),
        redirect_uri: fc.constantFrom(callbackUri, 'http://evil.example/cb', 'not a uri'),
        refresh_token: fc.oneof(
          fc.constant(refreshToken.slice(0, -2) + 'xx'),
          fc.base64String({ maxLength: 60 }),
        ),
        scope: fc.constantFrom('openid', 'service:crm.aggregates.read', 'openid profile email', 'admin', ''),
        client_id: fc.constantFrom(publicClientId, confidential.id, serviceClient.id, 'unknown-client'),
        client_secret: fc.constantFrom(confidential.secret, serviceClient.secret, 'wrong'),
        resource: fc.constantFrom('urn:ecosystem:api', 'http://elsewhere.example', 'not a uri'),
      });
      await fc.assert(
        fc.asyncProperty(
          body,
          clientAuthorization(),
          contentType,
          forwardedIp,
          async (form, authorization, type, ip) => {
            const what = `POST /oauth/token ${type} ${authorization ?? ''} ${form}`;
            const response = await checkRefusalWritesNothing(
              () =>
                send(service.issuer, {
                  method: 'POST',
                  path: '/oauth/token',
                  headers: {
                    'content-type': type,
                    'x-forwarded-for': ip,
                    ...(authorization === undefined ? {} : { authorization }),
                  },
                  body: form,
                }),
              (answer) => answer.status >= 400,
            );
            expectNoServerFault(response, what);
            if (response.status === 200)
              expect(JSON.parse(response.text), what).toHaveProperty('access_token');
            else expectOAuthError(response, what);
          },
        ),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );

  it(
    `GET /oauth/authorize: ${fuzzRuns} generated requests`,
    async () => {
      const query = formBody({
        response_type: fc.constantFrom('code', 'token', 'id_token', 'code id_token', 'none'),
        client_id: fc.constantFrom(publicClientId, confidential.id, serviceClient.id, 'unknown-client'),
        redirect_uri: fc.constantFrom(
          callbackUri,
          `${callbackUri}?x=1`,
          'http://evil.example/cb',
          'javascript:alert(1)',
        ),
        scope: fc.constantFrom(
          'openid',
          'openid profile email',
          'profile',
          'openid offline_access',
          'openid admin',
        ),
        state: fc.string({ maxLength: 20 }),
        nonce: fc.string({ maxLength: 20 }),
        code_challenge: fc.base64String({ minLength: 44, maxLength: 44 }).map((text) => text.slice(0, 43)),
        code_challenge_method: fc.constantFrom('S256', 'plain', 'S512'),
        prompt: fc.constantFrom('login', 'consent', 'none', 'select_account', 'create'),
        max_age: fc.oneof(fc.nat().map(String), fc.constant('-1')),
        response_mode: fc.constantFrom('query', 'fragment', 'form_post', 'jwt'),
        ui_locales: fc.constantFrom('en', 'ru', 'xx', 'en-US ru'),
        id_token_hint: fc.constantFrom('eyJhbGciOiJub25lIn0.e30.', 'garbage'),
        request: fc.constantFrom('eyJhbGciOiJub25lIn0.e30.'),
        claims: fc.constantFrom('{"userinfo":{"email":null}}', '{', 'null'),
      });
      const accept = fc.constantFrom('text/html', 'application/json', '*/*', '');
      await fc.assert(
        fc.asyncProperty(query, accept, forwardedIp, async (search, acceptHeader, ip) => {
          const what = `GET /oauth/authorize?${search}`;
          const response = await checkRefusalWritesNothing(
            () =>
              send(service.issuer, {
                method: 'GET',
                path: `/oauth/authorize?${search}`,
                headers: { accept: acceptHeader, 'x-forwarded-for': ip },
              }),
            (answer) => answer.status >= 400 || /[?#&]error=/.test(String(answer.headers.location)),
          );
          expectNoServerFault(response, what);
          if (response.status === 303 || response.status === 302) {
            const location = new URL(response.headers.location!, service.issuer);
            // Either on to the sign-in pages, or back to the client's registered redirect with an error.
            if (location.origin === service.issuer)
              expect(location.pathname, what).toMatch(/^\/(interaction|[a-z]{2})\//);
            else expect(location.href.startsWith(callbackUri), what).toBe(true);
          } else if (response.status === 200) {
            // response_mode=form_post answers the error to the client through an auto-submitting form.
            expect(response.headers['content-type'], what).toContain('text/html');
          } else {
            expect(response.status, what).toBeGreaterThanOrEqual(400);
            if (String(response.headers['content-type']).includes('json')) expectOAuthError(response, what);
            // The error page, or (response_mode=form_post) the error posted back to the registered client.
            else if (!response.text.includes(`action="${callbackUri}"`)) {
              expect(response.text, what).toContain('data-testid="error-code"');
            }
          }
        }),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );

  it(
    `POST /oauth/introspect: ${fuzzRuns} generated requests`,
    async () => {
      const body = formBody({
        token: fc.oneof(
          fc.constantFrom(accessToken, refreshToken, accessToken.slice(0, -4) + 'AAAA', `${accessToken}.x`),
          fc.base64String({ maxLength: 80 }),
        ),
        token_type_hint: fc.constantFrom('access_token', 'refresh_token', 'id_token', 'bogus'),
        client_id: fc.constantFrom(confidential.id, publicClientId),
        client_secret: fc.constantFrom(confidential.secret, 'wrong'),
      });
      await fc.assert(
        fc.asyncProperty(
          body,
          clientAuthorization(),
          contentType,
          forwardedIp,
          async (form, authorization, type, ip) => {
            const what = `POST /oauth/introspect ${authorization ?? ''} ${form}`;
            const response = await checkRefusalWritesNothing(
              () =>
                send(service.issuer, {
                  method: 'POST',
                  path: '/oauth/introspect',
                  headers: {
                    'content-type': type,
                    'x-forwarded-for': ip,
                    ...(authorization === undefined ? {} : { authorization }),
                  },
                  body: form,
                }),
              () => true, // introspection never writes
            );
            expectNoServerFault(response, what);
            if (response.status === 200)
              expect(typeof JSON.parse(response.text).active, what).toBe('boolean');
            else expectOAuthError(response, what);
          },
        ),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );

  it(
    `POST /oauth/clients/register: ${fuzzRuns} generated registrations`,
    async () => {
      const uri = fc.constantFrom(
        callbackUri,
        'https://app.example/cb',
        'http://evil.example/cb#frag',
        'not a uri',
        '',
      );
      const registration = objectOf({
        name: fc.constantFrom('Fuzzed app', '', 'x'.repeat(300)),
        type: fc.constantFrom('public', 'confidential', 'service', 'admin'),
        redirect_uris: fc.array(uri, { maxLength: 3 }),
        post_logout_redirect_uris: fc.array(uri, { maxLength: 2 }),
        scopes: fc.array(fc.constantFrom('openid', 'email', 'service:crm.aggregates.read', 'admin', ''), {
          maxLength: 3,
        }),
        grant_types: fc.array(
          fc.constantFrom('authorization_code', 'refresh_token', 'client_credentials', 'implicit'),
          {
            maxLength: 3,
          },
        ),
      });
      const token = fc.constantFrom(adminToken, adminToken, adminToken, accessToken, 'garbage', '');
      await fc.assert(
        fc.asyncProperty(rawJsonBody(registration), token, async (body, bearer) => {
          const what = `POST /oauth/clients/register ${body}`;
          const response = await checkRefusalWritesNothing(
            () =>
              send(service.issuer, {
                method: 'POST',
                path: '/oauth/clients/register',
                headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
                body,
              }),
            (answer) => answer.status >= 400,
          );
          expectNoServerFault(response, what);
          if (response.status === 201) expect(JSON.parse(response.text), what).toHaveProperty('client_id');
          else expectApiError(response, what, ['error_description']);
        }),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );
});
