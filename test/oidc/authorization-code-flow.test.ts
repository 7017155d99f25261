import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe('authorization code flow with PKCE, through discovery', () => {
  it('signs a user in through the login and consent pages and issues tokens with the spec claims', async () => {
    const { db } = service.service;
    const user = await createTestUser(db, {
      givenName: 'Ada',
      familyName: 'Lovelace',
      roles: ['super_admin'],
    });
    const { client } = await createTestClient(db);
    const config = await discover(service.issuer, client.clientId);

    const { tokens, request, callback } = await completeAuthorization(
      config,
      new HttpBrowser(service.issuer),
      {
        identifier: user.email!,
        password: user.password,
        parameters: { scope: 'openid profile email roles' },
      },
    );

    expect(callback.searchParams.get('state')).toBe(request.state);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(900);
    expect(tokens.refresh_token).toBeTruthy();

    const idToken = tokens.claims()!;
    expect(idToken).toMatchObject({
      sub: user.id,
      iss: service.issuer,
      aud: client.clientId,
      nonce: request.nonce,
      given_name: 'Ada',
      family_name: 'Lovelace',
      email: user.email,
      email_verified: true,
      global_roles: ['super_admin'],
      permissions: ['*'],
    });
    expect(typeof idToken.auth_time).toBe('number');
    expect(idToken).not.toHaveProperty('phone_number');

    const accessToken = decodeJwt(tokens.access_token);
    expect(decodeProtectedHeader(tokens.access_token)).toMatchObject({
      alg: 'RS256',
      typ: 'at+jwt',
      kid: service.service.keys.oidc.kid,
    });
    expect(accessToken).toMatchObject({
      sub: user.id,
      iss: service.issuer,
      aud: service.service.config.apiAudience,
      client_id: client.clientId,
      scope: 'openid profile email roles',
      roles: ['super_admin'],
      permissions: ['*'],
    });
    expect(accessToken.exp! - accessToken.iat!).toBe(900);
    expect(typeof accessToken.sessionId).toBe('string');

    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(userinfo).toEqual({
      sub: user.id,
      name: 'Ada Lovelace',
      given_name: 'Ada',
      family_name: 'Lovelace',
      email: user.email,
      email_verified: true,
      global_roles: ['super_admin'],
      permissions: ['*'],
    });
  });
});
