import { disableClient } from '../../src/oidc/models/oauth-client.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import {
  buildAuthorizationRequest,
  completeAuthorization,
  discover,
  oidc,
  signInThroughPages,
  type ClientAuth,
} from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());
afterEach(() => {
  vi.useRealTimers();
});

/** A user signed in through the pages, holding a fresh code (not yet redeemed). */
async function codeFor(type: 'public' | 'confidential' = 'public', auth?: ClientAuth) {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client, clientSecret } = await createTestClient(db, { type });
  const config = await discover(service.issuer, client.clientId, clientSecret, auth);
  const request = await buildAuthorizationRequest(config);
  const page = await signInThroughPages(new HttpBrowser(service.issuer), request.url, {
    identifier: user.email!,
    password: user.password,
  });
  const callback = new URL(page.url);
  return { user, client, clientSecret, config, request, callback, code: callback.searchParams.get('code')! };
}

async function tokenRequest(body: Record<string, string> | string, headers: Record<string, string> = {}) {
  const response = await fetch(service.url('/oauth/token'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: typeof body === 'string' ? body : new URLSearchParams(body).toString(),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, string>,
    headers: response.headers,
  };
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

async function refreshTokenCount(clientId: string): Promise<number> {
  const rows = await service.service
    .db('oauth_refresh_tokens')
    .where({ client_id: clientId })
    .select('token_hash');
  return rows.length;
}

describe('POST /oauth/token with authorization_code', () => {
  it.each(['client_secret_basic', 'client_secret_post'] as const)(
    'redeems a code for a confidential client authenticating with %s',
    async (auth) => {
      const { user, config, request, callback } = await codeFor('confidential', auth);
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
      });
      expect(tokens.claims()?.sub).toBe(user.id);
      expect(tokens.refresh_token).toBeTruthy();
    },
  );

  it('sends the tokens with Cache-Control: no-store and Pragma: no-cache (RFC 6749 §5.1)', async () => {
    const { client, request, code } = await codeFor();
    const answer = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code,
      code_verifier: request.codeVerifier,
      redirect_uri: callbackUri,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.access_token).toBeTruthy();
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('pragma')).toBe('no-cache');
  });

  it('stores the code and refresh token only as hashes', async () => {
    const { client, config, request, callback, code } = await codeFor();
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    const { db } = service.service;
    const [codeRow] = await db('authorization_codes').where({ client_id: client.clientId });
    expect(JSON.stringify(codeRow)).not.toContain(code);
    expect(codeRow).toMatchObject({ is_used: true, state: request.state, code_challenge_method: 'S256' });
    const [tokenRow] = await db('oauth_refresh_tokens').where({ client_id: client.clientId });
    expect(JSON.stringify(tokenRow)).not.toContain(tokens.refresh_token!);
  });

  it('refuses a wrong code_verifier with invalid_grant, issuing nothing', async () => {
    const { client, code } = await codeFor();
    const response = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code,
      redirect_uri: callbackUri,
      code_verifier: oidc.randomPKCECodeVerifier(),
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_grant');
    expect(await refreshTokenCount(client.clientId)).toBe(0);
  });

  it('refuses a public client without code_verifier (no PKCE downgrade)', async () => {
    const { client, code } = await codeFor();
    const response = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code,
      redirect_uri: callbackUri,
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_grant');
  });

  it('refuses a redirect_uri other than the one of the authorization request', async () => {
    const { client, request, code } = await codeFor();
    const response = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code,
      redirect_uri: `${callbackUri}?x=1`,
      code_verifier: request.codeVerifier,
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_grant');
  });

  it('redeems a code once; a second redemption fails and revokes what the first one issued', async () => {
    const { client, config, request, callback } = await codeFor();
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    const replay = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code: callback.searchParams.get('code')!,
      redirect_uri: callbackUri,
      code_verifier: request.codeVerifier,
    });
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('refuses a code after its 10 minutes', async () => {
    const { client, request, code } = await codeFor();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 10 * 60 * 1000 + 5_000 });
    const response = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code,
      redirect_uri: callbackUri,
      code_verifier: request.codeVerifier,
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      error: 'invalid_grant',
      error_description: 'grant request is invalid',
    });
  });

  it('refuses a wrong client secret with 401 invalid_client', async () => {
    const { client, request, code } = await codeFor('confidential');
    const response = await tokenRequest(
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: callbackUri,
        code_verifier: request.codeVerifier,
      },
      { authorization: basic(client.clientId, 'not-the-secret') },
    );
    expect(response.status).toBe(401);
    expect(response.body.error).toBe('invalid_client');
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic/);
  });

  it('refuses a confidential client that sends no secret', async () => {
    const { client, request, code } = await codeFor('confidential');
    const response = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code,
      redirect_uri: callbackUri,
      code_verifier: request.codeVerifier,
    });
    expect(response.status).toBe(401);
    expect(response.body.error).toBe('invalid_client');
  });

  it('refuses a client disabled after the code was issued', async () => {
    const { client, request, code } = await codeFor();
    await disableClient(service.service.db, client.clientId, new Date());
    const response = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.clientId,
      code,
      redirect_uri: callbackUri,
      code_verifier: request.codeVerifier,
    });
    expect(response.status).toBe(401);
    expect(response.body.error).toBe('invalid_client');
    expect(await refreshTokenCount(client.clientId)).toBe(0);
  });

  it('refuses a code issued to another client', async () => {
    const { request, code } = await codeFor();
    const { client: other } = await createTestClient(service.service.db);
    const response = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: other.clientId,
      code,
      redirect_uri: callbackUri,
      code_verifier: request.codeVerifier,
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_grant');
  });
});

describe('POST /oauth/token with bad requests', () => {
  it('a request naming no client at all: 401 invalid_client (RFC 6749 §5.2), at token and revocation', async () => {
    const answer = await tokenRequest({ grant_type: 'client_credentials' });
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('invalid_client');
    const revoke = await fetch(service.url('/oauth/revoke'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=abc',
    });
    expect(revoke.status).toBe(401);
    expect(((await revoke.json()) as { error: string }).error).toBe('invalid_client');
  });

  it.each([
    ['an empty id and secret', 'Basic Og=='],
    ['a secret without an id', `Basic ${Buffer.from(':secret').toString('base64')}`],
    ['an id without a secret', `Basic ${Buffer.from('some-client:').toString('base64')}`],
    ['no colon', `Basic ${Buffer.from('some-client').toString('base64')}`],
    ['not base64', 'Basic !!!'],
    ['another scheme', 'Bearer abc'],
  ])(
    'a client that authenticates with %s in the Authorization header: 401 invalid_client (RFC 6749 §5.2)',
    async (_label, authorization) => {
      const answer = await tokenRequest({ grant_type: 'client_credentials' }, { authorization });
      expect(answer.status).toBe(401);
      expect(answer.body.error).toBe('invalid_client');
      expect(answer.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    },
  );

  it('answers an unknown grant_type with unsupported_grant_type', async () => {
    const { client } = await createTestClient(service.service.db);
    const response = await tokenRequest({
      grant_type: 'password',
      client_id: client.clientId,
      username: 'a',
      password: 'b',
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('unsupported_grant_type');
  });

  it.each([
    ['an empty body', ''],
    ['no grant_type', 'client_id=abc'],
    ['a repeated parameter', 'grant_type=authorization_code&grant_type=refresh_token&client_id=abc'],
    ['garbage', '%%%=&&&'],
  ])('answers %s with an RFC 6749 error, never a 500', async (_label, body) => {
    const { client } = await createTestClient(service.service.db);
    const response = await tokenRequest(body.replace('abc', client.clientId));
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(response.body.error).toMatch(/^(invalid_request|invalid_client|unsupported_grant_type)$/);
    expect(typeof response.body.error_description).toBe('string');
  });

  it('answers a JSON body with invalid_request', async () => {
    const response = await fetch(service.url('/oauth/token'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials' }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('answers an unknown client with 401 invalid_client', async () => {
    const response = await tokenRequest(
      { grant_type: 'client_credentials' },
      { authorization: basic('nobody', 'x') },
    );
    expect(response.status).toBe(401);
    expect(response.body.error).toBe('invalid_client');
  });
});

describe('a whole flow for a confidential client through openid-client', () => {
  it('works from discovery with client_secret_basic', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const { client, clientSecret } = await createTestClient(db, { type: 'confidential' });
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
      identifier: user.email!,
      password: user.password,
    });
    expect(tokens.claims()?.aud).toBe(client.clientId);
  });
});
