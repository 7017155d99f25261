import crypto from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc } from '../support/relying-party.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

async function tokensFor(scope: string) {
  const { db } = service.service;
  const user = await createTestUser(db, {
    givenName: 'Grace',
    familyName: 'Hopper',
    phone: `+1555${crypto.randomInt(1e6, 9e6)}`,
    roles: ['user'],
  });
  await db('organization_memberships').insert({
    user_id: user.id,
    organization_id: crypto.randomUUID(),
    organization_name: 'Navy',
    role: 'admin',
  });
  const { client } = await createTestClient(db);
  const config = await discover(service.issuer, client.clientId);
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: user.email!,
    password: user.password,
    parameters: { scope },
  });
  return { user, config, tokens };
}

async function userinfo(authorization?: string) {
  const response = await fetch(service.url('/oauth/userinfo'), {
    headers: authorization ? { authorization } : {},
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

describe('GET /oauth/userinfo', () => {
  it('returns only sub for the openid scope alone', async () => {
    const { user, config, tokens } = await tokensFor('openid');
    expect(await oidc.fetchUserInfo(config, tokens.access_token, user.id)).toEqual({ sub: user.id });
  });

  it('returns the claims of each granted scope', async () => {
    const { user, config, tokens } = await tokensFor('openid profile email phone organizations roles');
    const claims = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(claims).toMatchObject({
      sub: user.id,
      given_name: 'Grace',
      family_name: 'Hopper',
      email: user.email,
      email_verified: true,
      phone_number: user.phone,
      phone_number_verified: false,
      global_roles: ['user'],
      permissions: [],
      organization_memberships: [{ organization_name: 'Navy', role: 'admin' }],
    });
  });

  it('refuses a service token: it has no openid scope (403 insufficient_scope)', async () => {
    const { client, clientSecret } = await createServiceClient(service.service.db, [
      'service:crm.aggregates.read',
    ]);
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const { access_token } = await oidc.clientCredentialsGrant(config);
    const answer = await userinfo(`Bearer ${access_token}`);
    expect(answer.status).toBe(403);
    expect(answer.body.error).toBe('insufficient_scope');
  });

  it('refuses a main-auth token: OAuth endpoints only accept OAuth tokens', async () => {
    const user = await createTestUser(service.service.db);
    const token = await mainAuthToken(service, user);
    const answer = await userinfo(`Bearer ${token}`);
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('invalid_token');
    expect(answer.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('refuses a token signed with another key, a forged alg none token, and garbage', async () => {
    const { tokens } = await tokensFor('openid');
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString());
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const foreign = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: service.service.keys.oidc.kid })
      .sign(privateKey);
    const unsigned = new UnsecuredJWT(claims).encode();
    for (const token of [foreign, unsigned, 'garbage', `${tokens.access_token}x`]) {
      const answer = await userinfo(`Bearer ${token}`);
      expect(answer.status).toBe(401);
      expect(answer.body.error).toBe('invalid_token');
    }
  });

  it('asks for a token when there is none, with a Bearer challenge', async () => {
    const answer = await userinfo();
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    expect(answer.body.error).toBe('invalid_request');
  });

  it('a token sent both in the header and the body, or twice in the body: 400 invalid_request (RFC 6750)', async () => {
    const { tokens } = await tokensFor('openid');
    const post = (body: string, authorization?: string) =>
      fetch(service.url('/oauth/userinfo'), {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          ...(authorization ? { authorization } : {}),
        },
        body,
      });
    const both = await post(`access_token=${tokens.access_token}`, `Bearer ${tokens.access_token}`);
    expect(both.status).toBe(400);
    expect(both.headers.get('www-authenticate')).toContain('error="invalid_request"');
    expect(((await both.json()) as { error: string }).error).toBe('invalid_request');
    const twice = await post(`access_token=${tokens.access_token}&access_token=${tokens.access_token}`);
    expect(twice.status).toBe(400);
    const once = await post(`access_token=${tokens.access_token}`);
    expect(once.status).toBe(200);
  });

  it('refuses the token of a user disabled since', async () => {
    const { user, tokens } = await tokensFor('openid');
    await service.service.db('users').where({ id: user.id }).update({ status: 'disabled' });
    expect((await userinfo(`Bearer ${tokens.access_token}`)).status).toBe(401);
  });
});
