import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { disableClient } from '../../src/oidc/models/oauth-client.js';
import { revokedGrantsPollMs } from '../../src/oidc/revoked-grants.js';
import { createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc, signInThroughPages } from '../support/relying-party.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { introspectAs, userinfoStatus as userinfoStatusOf } from '../support/resource-server-calls.js';

let service: TestService;
/** A resource server: a service client, which may introspect every client's access tokens. */
let resourceServer: { clientId: string; secret: string };
beforeAll(async () => {
  service = await startTestService();
  const { client, clientSecret } = await createServiceClient(service.service.db, [
    'service:crm.aggregates.read',
  ]);
  resourceServer = { clientId: client.clientId, secret: clientSecret! };
});
afterAll(() => service?.close());

const introspect = (token: string, caller = resourceServer) => introspectAs(service, caller, token);
const userinfoStatus = (token: string) => userinfoStatusOf(service, token);

/** Both of our endpoints accept the token now (the answers are remembered: what follows must override them). */
async function expectActive(token: string) {
  expect(await introspect(token)).toMatchObject({ active: true });
  expect(await userinfoStatus(token)).toBe(200);
}

async function expectInactive(token: string) {
  expect(await introspect(token)).toEqual({ active: false });
  expect(await userinfoStatus(token)).toBe(401);
}

/**
 * A user signed in to a confidential client through the pages, back at the client with a code that
 * `redeem` exchanges through openid-client (each call presents the same code).
 */
async function authorized() {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client, clientSecret } = await createTestClient(db, {
    type: 'confidential',
    postLogoutRedirectUris: ['http://localhost:8080/signed-out'],
  });
  const config = await discover(service.issuer, client.clientId, clientSecret);
  const browser = new HttpBrowser(service.issuer);
  const request = await buildAuthorizationRequest(config);
  const page = await signInThroughPages(browser, request.url, {
    identifier: user.email!,
    password: user.password,
  });
  const callback = new URL(page.url);
  const redeem = () =>
    oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
  return { user, client, config, browser, redeem };
}

/** The same, the code redeemed once. */
async function signedIn() {
  const signed = await authorized();
  return { ...signed, tokens: await signed.redeem() };
}

describe('an access token turns inactive with the authorization it came from', () => {
  it('a replayed authorization code: invalid_grant, and the first redemption’s access token is inactive (oidcc-codereuse)', async () => {
    const { config, tokens, redeem } = await signedIn();
    await expectActive(tokens.access_token);

    await expect(redeem()).rejects.toMatchObject({ error: 'invalid_grant' });

    await expectInactive(tokens.access_token);
    // Its own client's introspection says the same, and the refresh token died too.
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('also when the two redemptions race: one wins, and its access token is inactive afterwards', async () => {
    const { redeem } = await authorized();
    const outcomes = await Promise.allSettled([redeem(), redeem()]);
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const lost = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({ error: 'invalid_grant' });
    await expectInactive((won[0] as PromiseFulfilledResult<oidc.TokenEndpointResponse>).value.access_token);
  });

  it('leaves the same user’s other authorizations of that client alone', async () => {
    const first = await signedIn();
    const second = await signInAgain(first);
    await expect(first.redeem()).rejects.toMatchObject({ error: 'invalid_grant' });
    await expectInactive(first.tokens.access_token);
    await expectActive(second.access_token);
  });

  it('revoking a refresh token at /oauth/revoke makes its grant’s access tokens inactive (RFC 7009 §2.1)', async () => {
    const { config, tokens } = await signedIn();
    await expectActive(tokens.access_token);
    await oidc.tokenRevocation(config, tokens.refresh_token!, { token_type_hint: 'refresh_token' });
    await expectInactive(tokens.access_token);
  });

  it('withdrawing consent makes the user’s access tokens for that client inactive', async () => {
    const { user, client, tokens } = await signedIn();
    await expectActive(tokens.access_token);
    const response = await fetch(service.url(`/oauth/consents/${client.clientId}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${await mainAuthToken(service, user)}` },
    });
    expect(response.status).toBe(204);
    await expectInactive(tokens.access_token);
  });

  it('RP-initiated logout with an id_token_hint makes the user’s access tokens for that client inactive', async () => {
    const signed = await signedIn();
    const elsewhere = await signInAgain(signed);
    await expectActive(signed.tokens.access_token);
    const page = await signed.browser.navigate(
      `${service.url('/oauth/end_session')}?${new URLSearchParams({
        id_token_hint: signed.tokens.id_token!,
        post_logout_redirect_uri: 'http://localhost:8080/signed-out',
      })}`,
    );
    expect(page.status).toBeLessThan(400);
    await expectInactive(signed.tokens.access_token);
    await expectInactive(elsewhere.access_token);
  });

  it('the service’s own APIs refuse it too (401)', async () => {
    const { tokens, redeem } = await signedIn();
    const read = () =>
      fetch(service.url('/api/v2/platform/reference/subjects'), {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      }).then((response) => response.status);
    expect(await read()).toBe(200);
    await expect(redeem()).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await read()).toBe(401);
  });

  it('a grant revoked on another node is seen here within the poll, though the token was verified before', async () => {
    const { user, client, tokens } = await signedIn();
    await expectActive(tokens.access_token);
    // Another node recorded the revocation: this process hears nothing, only the database knows.
    const { db } = service.service;
    const grants: { id: string }[] = await db('oidc_payloads')
      .where({ model: 'Grant', account_id: user.id })
      .whereRaw(`payload->>'clientId' = ?`, [client.clientId])
      .select('id');
    expect(grants).toHaveLength(1);
    await db('oauth_revoked_grants').insert({
      grant_id: grants[0]!.id,
      expires_at: new Date(Date.now() + 15 * 60_000),
    });
    await vi.waitFor(async () => expect(await introspect(tokens.access_token)).toEqual({ active: false }), {
      timeout: revokedGrantsPollMs * 2 + 2_000,
      interval: 300,
    });
    expect(await userinfoStatus(tokens.access_token)).toBe(401);
  });
});

describe('the access tokens of a disabled client are inactive', () => {
  it('a user-flow client’s: at introspection and userinfo', async () => {
    const { client, tokens } = await signedIn();
    await expectActive(tokens.access_token);
    expect(await disableClient(service.service.db, client.clientId, new Date())).toBe(true);
    await expectInactive(tokens.access_token);
  });

  it('a service client’s: at introspection', async () => {
    const { client, clientSecret } = await createServiceClient(service.service.db, [
      'service:crm.aggregates.read',
    ]);
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const { access_token } = await oidc.clientCredentialsGrant(config);
    expect(await introspect(access_token)).toMatchObject({ active: true, sub: client.clientId });
    await disableClient(service.service.db, client.clientId, new Date());
    expect(await introspect(access_token)).toEqual({ active: false });
  });
});

/** The same user and client authorized again in another browser (consent remembered). */
async function signInAgain(first: Awaited<ReturnType<typeof signedIn>>) {
  const request = await buildAuthorizationRequest(first.config);
  const page = await signInThroughPages(new HttpBrowser(service.issuer), request.url, {
    identifier: first.user.email!,
    password: first.user.password,
    consent: 'expect-none',
  });
  return oidc.authorizationCodeGrant(first.config, new URL(page.url), {
    pkceCodeVerifier: request.codeVerifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
}
