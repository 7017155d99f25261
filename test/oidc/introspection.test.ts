import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { updateClient } from '../../src/oidc/models/oauth-client.js';
import { createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { discover, oidc } from '../support/relying-party.js';
import { mainAuthToken, startTestSession, userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());
afterEach(() => {
  vi.useRealTimers();
});

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function introspect(authorization: string | undefined, body: Record<string, string>) {
  const response = await fetch(service.url('/oauth/introspect'), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
    },
    body: new URLSearchParams(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

describe('POST /oauth/introspect', () => {
  it('describes an active access token and refresh token to their client (openid-client)', async () => {
    const { user, client, config, tokens } = await userWithTokens(service, 'confidential');
    const access = await oidc.tokenIntrospection(config, tokens.access_token, {
      token_type_hint: 'access_token',
    });
    expect(access).toMatchObject({
      active: true,
      sub: user.id,
      client_id: client.clientId,
      scope: 'openid profile email',
      iss: service.issuer,
      token_type: 'Bearer',
    });
    expect(access.exp! - access.iat!).toBe(900);
    const refresh = await oidc.tokenIntrospection(config, tokens.refresh_token!);
    expect(refresh).toMatchObject({
      active: true,
      sub: user.id,
      client_id: client.clientId,
    });
    // token_type is an access token's type (RFC 7662 §2.2, RFC 6749 §7.1), as the engine answers.
    expect(refresh).not.toHaveProperty('token_type');
    expect(refresh.exp! - refresh.iat!).toBe(30 * 24 * 3600);
  });

  it('names only the scopes the client is still allowed, for refresh tokens as for access tokens', async () => {
    const { client, config, tokens } = await userWithTokens(service, 'confidential');
    await updateClient(service.service.db, client.clientId, { scopes: ['openid', 'profile'] }, new Date());
    for (const token of [tokens.access_token, tokens.refresh_token!]) {
      expect(await oidc.tokenIntrospection(config, token)).toMatchObject({
        active: true,
        scope: 'openid profile',
      });
    }
  });

  it('lets a service (resource server) introspect user access tokens of other clients', async () => {
    const { user, tokens } = await userWithTokens(service);
    const { client, clientSecret } = await createServiceClient(service.service.db, [
      'service:crm.aggregates.read',
    ]);
    const answer = await introspect(basic(client.clientId, clientSecret!), { token: tokens.access_token });
    expect(answer.body).toMatchObject({ active: true, sub: user.id });
  });

  it('tells a resource server whether a main-auth token’s session is live; nobody else', async () => {
    const { client: resourceServer, clientSecret } = await createServiceClient(service.service.db, [
      'service:crm.aggregates.read',
    ]);
    const asResourceServer = basic(resourceServer.clientId, clientSecret!);
    const user = await createTestUser(service.service.db);
    const sessionId = await startTestSession(service, user.id);
    const token = await mainAuthToken(service, user, { sessionId });
    const live = await introspect(asResourceServer, { token });
    expect(live).toMatchObject({ status: 200, body: { active: true, sub: user.id, iss: service.issuer } });
    expect(live.body.exp! as number).toBeGreaterThan(Date.now() / 1000);
    // An application's client sees no tokens but its own: a main-auth token is nobody's.
    const application = await createTestClient(service.service.db, { type: 'confidential' });
    const asApplication = basic(application.client.clientId, application.clientSecret!);
    expect((await introspect(asApplication, { token })).body).toEqual({ active: false });

    // The owner throws that session out from another device: a copy of its token is inactive here at
    // once, whatever its exp says.
    const elsewhere = await mainAuthToken(service, user);
    const revoked = await fetch(service.url(`/api/v2/identity/security/sessions/${sessionId}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${elsewhere}` },
    });
    expect(revoked.status).toBe(200);
    expect((await introspect(asResourceServer, { token })).body).toEqual({ active: false });
  });

  it('answers exactly {"active":false} for what is not active or not the caller’s', async () => {
    const { client, clientSecret, config, tokens } = await userWithTokens(service, 'confidential');
    const rotated = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    const other = await createTestClient(service.service.db, { type: 'confidential' });
    const otherUser = await userWithTokens(service, 'confidential');
    const caller = basic(client.clientId, clientSecret!);
    const forged = `${tokens.access_token.split('.').slice(0, 2).join('.')}.${'A'.repeat(342)}`;
    const mainAuth = await mainAuthToken(service, { id: otherUser.user.id });
    // Its own client sees it (and the service now remembers it as verified): visibility is still checked.
    const byOwner = basic(otherUser.client.clientId, otherUser.clientSecret!);
    expect((await introspect(byOwner, { token: otherUser.tokens.access_token })).body.active).toBe(true);
    for (const token of [
      tokens.refresh_token!, // rotated out
      'not-a-token',
      forged,
      mainAuth, // main-auth tokens are not OAuth tokens
      otherUser.tokens.access_token, // another client's access token
      otherUser.tokens.refresh_token!, // another client's refresh token
    ]) {
      const answer = await introspect(caller, { token });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ active: false });
    }
    // ...and the other client can't see this client's tokens either.
    const fromOther = await introspect(basic(other.client.clientId, other.clientSecret!), {
      token: rotated.refresh_token!,
    });
    expect(fromOther.body).toEqual({ active: false });
  });

  it('answers inactive for a disabled user’s tokens and for a revoked refresh token', async () => {
    const { user, client, clientSecret, config, tokens } = await userWithTokens(service, 'confidential');
    await oidc.tokenRevocation(config, tokens.refresh_token!);
    const caller = basic(client.clientId, clientSecret!);
    expect((await introspect(caller, { token: tokens.refresh_token! })).body).toEqual({ active: false });
    await service.service.db('users').where({ id: user.id }).update({ status: 'disabled' });
    expect((await introspect(caller, { token: tokens.access_token })).body).toEqual({ active: false });
  });

  it('answers inactive for a refresh token whose grant has expired, as the token endpoint refuses it', async () => {
    const { client, clientSecret, config, tokens } = await userWithTokens(service, 'confidential');
    const { db } = service.service;
    const { token_family_id: grantId } = await db('oauth_refresh_tokens')
      .where({ client_id: client.clientId })
      .first('token_family_id');
    // The grant ends before the refresh token's own 30 days (a token rotated late in its grant's life).
    await db('oidc_payloads')
      .where({ model: 'Grant', id: grantId })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const caller = basic(client.clientId, clientSecret!);
    expect((await introspect(caller, { token: tokens.refresh_token! })).body).toEqual({ active: false });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('answers inactive once an access token has expired, also one introspected before', async () => {
    const { client, clientSecret, tokens } = await userWithTokens(service, 'confidential');
    const caller = basic(client.clientId, clientSecret!);
    const first = await introspect(caller, { token: tokens.access_token });
    expect(first.body.active).toBe(true);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(((first.body.exp as number) + 1) * 1000);
    expect((await introspect(caller, { token: tokens.access_token })).body).toEqual({ active: false });
  });

  it('requires HTTP Basic client authentication', async () => {
    const { client, clientSecret, tokens } = await userWithTokens(service, 'confidential');
    for (const authorization of [
      undefined,
      basic(client.clientId, 'wrong'),
      basic('nobody', 'x'),
      'Bearer something',
      'Basic !!!',
    ]) {
      const answer = await introspect(authorization, { token: tokens.access_token });
      expect(answer.status).toBe(401);
      expect(answer.body.error).toBe('invalid_client');
      expect(answer.headers.get('www-authenticate')).toMatch(/^Basic/);
    }
    // client_secret_post is not how this endpoint authenticates.
    const posted = await introspect(undefined, {
      token: tokens.access_token,
      client_id: client.clientId,
      client_secret: clientSecret!,
    });
    expect(posted.status).toBe(401);
  });

  it('refuses a public client (it has no secret)', async () => {
    const { client } = await createTestClient(service.service.db);
    const answer = await introspect(basic(client.clientId, 'anything'), { token: 'x' });
    expect(answer.status).toBe(401);
  });

  it('answers a missing token with invalid_request', async () => {
    const { client, clientSecret } = await createTestClient(service.service.db, { type: 'confidential' });
    const answer = await introspect(basic(client.clientId, clientSecret!), {});
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
  });

  it('takes only a POST with a form of single parameters, in the OAuth error shape', async () => {
    const { client, clientSecret, tokens } = await userWithTokens(service, 'confidential');
    const authorization = basic(client.clientId, clientSecret!);

    const get = await fetch(service.url(`/oauth/introspect?token=${tokens.access_token}`), {
      headers: { authorization },
    });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(await get.json()).toMatchObject({ error: 'invalid_request' });

    const repeated = await fetch(service.url('/oauth/introspect'), {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${tokens.access_token}&token=${tokens.access_token}`,
    });
    expect(repeated.status).toBe(400);
    expect(await repeated.json()).toMatchObject({
      error: 'invalid_request',
      error_description: 'the token parameter must not be repeated',
    });

    // A JSON body is not a form: no token was sent.
    const json = await fetch(service.url('/oauth/introspect'), {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ token: tokens.access_token }),
    });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });

    // The same request as a form is answered.
    expect(await introspect(authorization, { token: tokens.access_token })).toMatchObject({
      status: 200,
      body: { active: true },
    });
  });

  it('works through discovery with openid-client for a service token', async () => {
    const { client, clientSecret } = await createServiceClient(service.service.db, [
      'service:crm.aggregates.read',
    ]);
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const { access_token } = await oidc.clientCredentialsGrant(config);
    const answer = await oidc.tokenIntrospection(config, access_token);
    expect(answer).toMatchObject({
      active: true,
      sub: client.clientId,
      client_id: client.clientId,
      scope: 'service:crm.aggregates.read',
    });
  });
});
