import { disableClient } from '../../src/oidc/models/oauth-client.js';
import { SignJWT, decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createTestClient, createTestUser, uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser, pageText } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc, signInThroughPages } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

async function publicClient(overrides = {}) {
  const { client } = await createTestClient(service.service.db, overrides);
  return { client, config: await discover(service.issuer, client.clientId) };
}

/** An authorize request with our own parameters (openid-client would not build broken ones). */
function authorizeUrl(parameters: Record<string, string | undefined>): string {
  const url = new URL(service.url('/oauth/authorize'));
  for (const [name, value] of Object.entries(parameters))
    if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

describe('GET /oauth/authorize', () => {
  it('redirects to the login page for a valid request', async () => {
    const { config } = await publicClient();
    const request = await buildAuthorizationRequest(config);
    const page = await new HttpBrowser(service.issuer).navigate(request.url.toString());
    expect(page.status).toBe(200);
    expect(new URL(page.url).pathname).toBe('/en/auth');
    expect(new URL(page.url).searchParams.get('interaction')).toBeTruthy();
    expect(page.html).toContain('name="identifier"');
  });

  it.each([
    ['an unregistered redirect_uri', 'https://evil.example.com/callback'],
    ['an added query', `${callbackUri}?next=evil`],
    ['another path', `${callbackUri}/more`],
    ['a trailing slash', `${callbackUri}/`],
    ['another case', callbackUri.replace('callback', 'Callback')],
    ['userinfo', 'http://attacker@localhost:8080/callback'],
    ['an @ host trick', 'http://localhost:8080@evil.example.com/callback'],
    ['a subdomain', 'http://sub.localhost:8080/callback'],
    ['a fragment', `${callbackUri}#x`],
  ])('renders an error page and never redirects for %s', async (_label, redirectUri) => {
    const { client } = await publicClient();
    const response = await fetch(
      authorizeUrl({
        client_id: client.clientId,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'abc',
      }),
      { redirect: 'manual' },
    );
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    const html = await response.text();
    expect(html).toContain('invalid_redirect_uri');
    expect(html).not.toContain('evil.example.com');
  });

  it('renders an error page for an unknown or disabled client', async () => {
    const { client } = await publicClient();
    await disableClient(service.service.db, client.clientId, new Date());
    for (const clientId of [client.clientId, 'no-such-client']) {
      const response = await fetch(
        authorizeUrl({
          client_id: clientId,
          response_type: 'code',
          scope: 'openid',
          redirect_uri: callbackUri,
          code_challenge: challenge,
          code_challenge_method: 'S256',
        }),
        { redirect: 'manual' },
      );
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(await response.text()).toContain('invalid_client');
    }
  });

  it.each([
    ['without code_challenge', { code_challenge: undefined, code_challenge_method: undefined }],
    ['with the plain method', { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }],
  ])('sends the client back with invalid_request %s, state unchanged', async (_label, pkce) => {
    const { client } = await publicClient();
    const response = await fetch(
      authorizeUrl({
        client_id: client.clientId,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: callbackUri,
        state: 'state with spaces & symbols',
        ...pkce,
      }),
      { redirect: 'manual' },
    );
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(callbackUri);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe('state with spaces & symbols');
  });

  it('also requires PKCE for confidential clients', async () => {
    const { client } = await createTestClient(service.service.db, { type: 'confidential' });
    const response = await fetch(
      authorizeUrl({
        client_id: client.clientId,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: callbackUri,
      }),
      { redirect: 'manual' },
    );
    const location = new URL(response.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('error_description')).toMatch(/PKCE/);
  });

  it('refuses response types other than code', async () => {
    const { client } = await publicClient();
    const response = await fetch(
      authorizeUrl({
        client_id: client.clientId,
        response_type: 'token',
        scope: 'openid',
        redirect_uri: callbackUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
      { redirect: 'manual' },
    );
    const location = new URL(response.headers.get('location')!.replace('#', '?'));
    expect(location.searchParams.get('error')).toBe('unsupported_response_type');
  });

  it('filters requested scopes against the client allowed_scopes and returns state unchanged', async () => {
    const { db } = service.service;
    const user = await createTestUser(db, { email: uniqueEmail(), phone: '+15550001111' });
    const { client, config } = await publicClient({ scopes: ['openid', 'email'] });
    const request = await buildAuthorizationRequest(config, { scope: 'openid email phone roles' });
    const browser = new HttpBrowser(service.issuer);
    let page = await browser.navigate(request.url.toString());
    page = await browser.submit(page, { identifier: user.email! });
    page = await browser.submit(page, { password: user.password });
    // The consent screen lists only what the client may have.
    expect(pageText(page, 'client-name')).toBe('Test application');
    expect(page.html).toContain('data-scope="email"');
    expect(page.html).not.toContain('data-scope="phone"');
    expect(page.html).not.toContain('data-scope="roles"');
    page = await browser.submit(page, { decision: 'allow' });
    const callback = new URL(page.url);
    expect(callback.searchParams.get('state')).toBe(request.state);
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.scope).toBe('openid email');
    const claims = tokens.claims()!;
    expect(claims.email).toBe(user.email);
    expect(claims).not.toHaveProperty('phone_number');
    expect(claims).not.toHaveProperty('global_roles');
    expect(client.allowedScopes).toEqual(['openid', 'email']);
  });

  it('signs in by phone number as well as by email', async () => {
    const { db } = service.service;
    const user = await createTestUser(db, { phone: '+15550002222', email: undefined });
    const { config } = await publicClient();
    const request = await buildAuthorizationRequest(config, { scope: 'openid phone' });
    const page = await signInThroughPages(new HttpBrowser(service.issuer), request.url, {
      identifier: '+1 (555) 000-2222',
      password: user.password,
    });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.claims()).toMatchObject({ sub: user.id, phone_number: '+15550002222' });
  });

  it('prompt=none refuses an id_token_hint that is an access token (typ at+jwt), as any invalid hint', async () => {
    const { config, tokens, browser } = await userWithTokens(service);
    const { keys } = service.service;
    const hints = {
      accessToken: tokens.access_token,
      // an access token carrying the client as its audience, as an ID token does
      accessTokenForClient: await new SignJWT(decodeJwt(tokens.id_token!))
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: keys.oidc.kid })
        .sign(keys.oidc.privateKey),
      idToken: tokens.id_token!,
    };
    const answers: Record<string, Record<string, string>> = {};
    for (const [kind, hint] of Object.entries(hints)) {
      const request = await buildAuthorizationRequest(config, { prompt: 'none', id_token_hint: hint });
      const page = await browser.navigate(request.url.toString());
      expect(page.url.startsWith(callbackUri)).toBe(true);
      const callback = Object.fromEntries(new URL(page.url).searchParams);
      expect(callback.state).toBe(request.state);
      answers[kind] = callback.code ? { code: 'issued' } : { ...callback, state: 'kept', iss: 'ours' };
    }
    const refused = {
      error: 'invalid_request',
      error_description: 'could not validate id_token_hint',
      state: 'kept',
      iss: 'ours',
    };
    expect(answers).toEqual({
      accessToken: refused,
      accessTokenForClient: refused,
      idToken: { code: 'issued' },
    });
  });
});
