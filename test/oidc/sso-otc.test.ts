import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveConsent } from '../../src/oidc/models/consent.js';
import { ssoCodeGrantType } from '../../src/oidc/sso/sso-clients.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { mainAuthToken, startTestSession } from '../support/sign-in.js';
import { IdentityClient } from '../identity/support/identity-client.js';
import { ManualClock } from '../support/manual-clock.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';
import {
  exchangeSsoCode,
  proveSingleUseUnderParallelExchanges,
  requestSsoCode,
  ssoParties,
} from './support/sso-code.js';

const clock = new ManualClock();
let service: TestService;
beforeAll(async () => {
  service = await startTestService({ clock });
});
afterAll(() => service?.close());

async function issuedCode(parties: Awaited<ReturnType<typeof ssoParties>>, scope?: string) {
  const response = await requestSsoCode(service, parties.accessToken, {
    client_id: parties.client.clientId,
    ...(scope ? { scope } : {}),
  });
  expect(response.status).toBe(201);
  expect(response.headers.get('cache-control')).toBe('no-store');
  return (await response.json()) as { code: string; scope: string; expires_in: number; client_id: string };
}

describe('POST /oauth/sso/otc', () => {
  it('gives a signed-in user a 6-character code for one client, valid 60 seconds, stored as a digest', async () => {
    const parties = await ssoParties(service);
    const issued = await issuedCode(parties, 'openid email profile');
    expect(issued.code).toMatch(/^[0-9A-Z]{6}$/);
    expect(issued).toMatchObject({ client_id: parties.client.clientId, expires_in: 60 });
    expect(issued.scope.split(' ').sort()).toEqual(['email', 'openid', 'profile']);
    const rows = await service.service
      .db('verification_codes')
      .where({ identifier: parties.client.clientId });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ purpose: 'sso_otc', status: 'pending', user_id: parties.user.id });
    expect(JSON.stringify(rows[0])).not.toContain(issued.code);
  });

  it('filters the scopes against what the client is allowed', async () => {
    const { db } = service.service;
    const parties = await ssoParties(service);
    const { client } = await createTestClient(db, { type: 'confidential', scopes: ['openid', 'email'] });
    await saveConsent(db, parties.user.id, client.clientId, ['openid', 'email', 'roles'], clock.now());
    const response = await requestSsoCode(service, parties.accessToken, {
      client_id: client.clientId,
      scope: 'openid email roles',
    });
    expect(response.status).toBe(201);
    expect(((await response.json()) as { scope: string }).scope).toBe('openid email');
  });

  it('refuses a caller without a main-auth token of a live session', async () => {
    const parties = await ssoParties(service);
    const anonymous = await requestSsoCode(service, undefined, { client_id: parties.client.clientId });
    expect(anonymous.status).toBe(401);
    const forged = await requestSsoCode(service, 'not-a-token', { client_id: parties.client.clientId });
    expect(forged.status).toBe(401);
  });

  it.each([
    ['no client_id', {}],
    ['a client_id that is not a string', { client_id: 42 }],
    ['an unknown field', { client_id: 'x', redirect_uri: 'https://evil.example' }],
  ])('answers 400 for %s', async (_label, body) => {
    const parties = await ssoParties(service);
    const response = await requestSsoCode(service, parties.accessToken, body);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses unknown, public and disabled clients with invalid_client', async () => {
    const { db } = service.service;
    const parties = await ssoParties(service);
    const { client: publicClient } = await createTestClient(db, { type: 'public' });
    const { client: disabled } = await createTestClient(db, { type: 'confidential' });
    await db('oauth_clients').where({ client_id: disabled.clientId }).update({ is_active: false });
    for (const clientId of ['no-such-client', publicClient.clientId, disabled.clientId]) {
      const response = await requestSsoCode(service, parties.accessToken, { client_id: clientId });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: 'invalid_client' });
    }
    expect(await db('verification_codes').where({ user_id: parties.user.id })).toHaveLength(0);
  });
});

describe('a third-party client gets by code only what the user consented to', () => {
  it('refuses a code for a client the user never consented to', async () => {
    const { db } = service.service;
    const parties = await ssoParties(service, { consent: null });
    const response = await requestSsoCode(service, parties.accessToken, {
      client_id: parties.client.clientId,
      scope: 'openid email profile',
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ error: 'consent_required' });
    expect(await db('verification_codes').where({ user_id: parties.user.id })).toHaveLength(0);
  });

  it('gives the scopes consented at authorize, not the others the client is allowed', async () => {
    const { db } = service.service;
    const parties = await ssoParties(service, { consent: null });
    const config = await discover(service.issuer, parties.client.clientId, parties.clientSecret);
    await completeAuthorization(config, new HttpBrowser(service.issuer), {
      identifier: parties.user.email!,
      password: parties.user.password,
      parameters: { scope: 'openid email' },
    });
    const consent = await db('consents').where({ user_id: parties.user.id }).first();
    expect([...consent.scopes].sort()).toEqual(['email', 'openid']);

    const issued = await issuedCode(parties, 'openid email profile phone roles');
    expect(issued.scope.split(' ').sort()).toEqual(['email', 'openid']);
    const tokens = await oidc.genericGrantRequest(config, ssoCodeGrantType, { code: issued.code });
    expect(tokens.scope?.split(' ').sort()).toEqual(['email', 'openid']);
    expect(decodeJwt(tokens.access_token).permissions).toBeUndefined();
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, parties.user.id);
    expect(userinfo.email).toBe(parties.user.email);
    expect(userinfo).not.toHaveProperty('name');
  });

  it('gives no tokens for a code whose consent was withdrawn before the exchange', async () => {
    const parties = await ssoParties(service);
    const issued = await issuedCode(parties, 'openid email');
    const withdrawn = await fetch(service.url(`/oauth/consents/${parties.client.clientId}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${parties.accessToken}` },
    });
    expect(withdrawn.status).toBe(204);
    const answer = await exchangeSsoCode(
      service,
      { clientId: parties.client.clientId, clientSecret: parties.clientSecret },
      issued.code,
    );
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'invalid_grant' });
  });
});

describe('a code ends with the session that asked for it', () => {
  /** What the client gets for the code, through openid-client: tokens, or the token endpoint's error. */
  async function exchangeThroughClient(parties: Awaited<ReturnType<typeof ssoParties>>, code: string) {
    const config = await discover(service.issuer, parties.client.clientId, parties.clientSecret);
    return oidc.genericGrantRequest(config, ssoCodeGrantType, { code });
  }

  it('revoked in the security settings: invalid_grant; another session’s code stays', async () => {
    const parties = await ssoParties(service);
    const { db } = service.service;
    const asking = await startTestSession(service, parties.user.id);
    const other = await startTestSession(service, parties.user.id);
    const askingToken = await mainAuthToken(service, parties.user, { sessionId: asking });
    const otherToken = await mainAuthToken(service, parties.user, { sessionId: other });
    const { code } = await issuedCode({ ...parties, accessToken: askingToken });
    // The other session's code, for another client (one live code per user and client).
    const bystander = await createTestClient(db, { type: 'confidential' });
    await saveConsent(db, parties.user.id, bystander.client.clientId, ['openid'], clock.now());
    const bystanderParties = { ...parties, client: bystander.client, clientSecret: bystander.clientSecret! };
    const { code: bystanderCode } = await issuedCode({ ...bystanderParties, accessToken: otherToken });

    const revoked = await fetch(service.url(`/api/v2/identity/security/sessions/${asking}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${otherToken}` },
    });
    expect(revoked.status).toBe(200);
    await expect(exchangeThroughClient(parties, code)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await exchangeThroughClient(bystanderParties, bystanderCode)).access_token).toBeTruthy();
  });

  it('logged out: invalid_grant', async () => {
    const parties = await ssoParties(service);
    const login = await new IdentityClient(service).login(parties.user.email!, parties.user.password);
    const { code } = await issuedCode({ ...parties, accessToken: login.accessToken });
    const loggedOut = await fetch(service.url('/api/v2/identity/auth/logout'), {
      method: 'POST',
      headers: { cookie: login.refreshCookie },
    });
    expect(loggedOut.status).toBe(200);
    await expect(exchangeThroughClient(parties, code)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
  it('exchanged before the session ended: the client’s tokens end with it; another session’s stay', async () => {
    // A thief with a copied access token asks for a code and has the client exchange it at once.
    const parties = await ssoParties(service);
    const asking = await startTestSession(service, parties.user.id);
    const other = await startTestSession(service, parties.user.id);
    const askingToken = await mainAuthToken(service, parties.user, { sessionId: asking });
    const otherToken = await mainAuthToken(service, parties.user, { sessionId: other });
    const { code } = await issuedCode({ ...parties, accessToken: askingToken });
    const tokens = await exchangeThroughClient(parties, code);
    const bystander = await createTestClient(service.service.db, { type: 'confidential' });
    await saveConsent(
      service.service.db,
      parties.user.id,
      bystander.client.clientId,
      ['openid'],
      clock.now(),
    );
    const bystanderParties = { ...parties, client: bystander.client, clientSecret: bystander.clientSecret! };
    const { code: bystanderCode } = await issuedCode({ ...bystanderParties, accessToken: otherToken });
    const kept = await exchangeThroughClient(bystanderParties, bystanderCode);

    const revoked = await fetch(service.url(`/api/v2/identity/security/sessions/${asking}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${otherToken}` },
    });
    expect(revoked.status).toBe(200);

    const config = await discover(service.issuer, parties.client.clientId, parties.clientSecret);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    const userinfo = await fetch(service.url('/oauth/userinfo'), {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(userinfo.status).toBe(401);
    const keptConfig = await discover(service.issuer, bystander.client.clientId, bystander.clientSecret!);
    expect((await oidc.refreshTokenGrant(keptConfig, kept.refresh_token!)).access_token).toBeTruthy();
  });
});

describe('the exchange (grant_type urn:identity-service:grant-type:sso-otc at /oauth/token)', () => {
  it('gives the client tokens of the user, created at the exchange, through openid-client', async () => {
    const parties = await ssoParties(service);
    const issued = await issuedCode(parties, 'openid email');
    const config = await discover(service.issuer, parties.client.clientId, parties.clientSecret);
    const tokens = await oidc.genericGrantRequest(config, ssoCodeGrantType, { code: issued.code });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.scope?.split(' ').sort()).toEqual(['email', 'openid']);
    expect(tokens.claims()).toMatchObject({ sub: parties.user.id, aud: parties.client.clientId });
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: parties.user.id,
      client_id: parties.client.clientId,
      aud: service.service.config.apiAudience,
    });
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, parties.user.id);
    expect(userinfo.email).toBe(parties.user.email);
    // The refresh token works like any other (rotation included).
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(decodeJwt(refreshed.access_token).sub).toBe(parties.user.id);
    // Nothing of the tokens is kept with the code.
    const [row] = await service.service
      .db('verification_codes')
      .where({ identifier: parties.client.clientId });
    expect(row).toMatchObject({ status: 'used' });
    expect(JSON.stringify(row)).not.toContain(tokens.access_token.slice(-20));
  });

  it("carries the session's last authentication as auth_time, so a code is no fresh sign-in", async () => {
    const { db } = service.service;
    // An administrator whose sign-in is an hour old, and the service's own (first-party) application.
    const user = await createTestUser(db, { roles: ['super_admin'] });
    const signedInAt = new Date(clock.now().getTime() - 60 * 60_000);
    const accessToken = await mainAuthToken(service, user, { authTime: signedInAt });
    const { client, clientSecret } = await createTestClient(db, { type: 'confidential', firstParty: true });
    const issued = await requestSsoCode(service, accessToken, {
      client_id: client.clientId,
      scope: 'openid roles',
    });
    expect(issued.status).toBe(201);
    const { code } = (await issued.json()) as { code: string };
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const tokens = await oidc.genericGrantRequest(config, ssoCodeGrantType, { code });
    const authTime = Math.floor(signedInAt.getTime() / 1000);
    expect(decodeJwt(tokens.access_token).auth_time).toBe(authTime);
    expect(tokens.claims()?.auth_time).toBe(authTime);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(decodeJwt(refreshed.access_token).auth_time).toBe(authTime);
    // So the token is no re-authentication: a sensitive change still asks for one.
    const registration = await fetch(service.url('/oauth/clients/register'), {
      method: 'POST',
      headers: { authorization: `Bearer ${refreshed.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'x', redirect_uris: ['https://app.example/cb'], scope: 'openid' }),
    });
    expect(registration.status).toBe(401);
    expect(await registration.json()).toMatchObject({ error: 'reauthentication_required' });
  });

  it('accepts a code once', async () => {
    const parties = await ssoParties(service);
    const { code } = await issuedCode(parties);
    const client = { clientId: parties.client.clientId, clientSecret: parties.clientSecret };
    expect((await exchangeSsoCode(service, client, code)).status).toBe(200);
    const again = await exchangeSsoCode(service, client, code);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('gives tokens once when the same code is exchanged by many requests at once', async () => {
    await proveSingleUseUnderParallelExchanges(service);
  });

  it('does not accept a code made for another client', async () => {
    const parties = await ssoParties(service);
    const { code } = await issuedCode(parties);
    const other = await createTestClient(service.service.db, { type: 'confidential' });
    const answer = await exchangeSsoCode(
      service,
      { clientId: other.client.clientId, clientSecret: other.clientSecret! },
      code,
    );
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'invalid_grant' });
    // The code is still the named client's.
    const own = { clientId: parties.client.clientId, clientSecret: parties.clientSecret };
    expect((await exchangeSsoCode(service, own, code)).status).toBe(200);
  });

  it('requires the client to authenticate', async () => {
    const parties = await ssoParties(service);
    const { code } = await issuedCode(parties);
    const wrong = await exchangeSsoCode(
      service,
      { clientId: parties.client.clientId, clientSecret: 'wrong-secret' },
      code,
    );
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });
    const anonymous = await fetch(service.url('/oauth/token'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: ssoCodeGrantType, code, client_id: parties.client.clientId }),
    });
    expect(anonymous.status).toBe(401);
    const own = { clientId: parties.client.clientId, clientSecret: parties.clientSecret };
    expect((await exchangeSsoCode(service, own, code)).status).toBe(200);
  });

  it('answers invalid_request without a code', async () => {
    const parties = await ssoParties(service);
    const answer = await exchangeSsoCode(
      service,
      { clientId: parties.client.clientId, clientSecret: parties.clientSecret },
      '',
    );
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('ends every live code of the client after 5 wrong codes, so 60 seconds are not enough to guess', async () => {
    const parties = await ssoParties(service);
    const { code } = await issuedCode(parties);
    const client = { clientId: parties.client.clientId, clientSecret: parties.clientSecret };
    const wrong = code === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA';
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await exchangeSsoCode(service, client, wrong)).status).toBe(400);
    }
    const late = await exchangeSsoCode(service, client, code);
    expect(late.status).toBe(400);
    expect(await late.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('is not advertised in discovery (the spec lists the public grants)', async () => {
    const document = (await (await fetch(service.url('/.well-known/openid-configuration'))).json()) as {
      grant_types_supported: string[];
    };
    expect(document.grant_types_supported).not.toContain(ssoCodeGrantType);
  });

  // Last: it moves the clock of the whole file.
  it('does not accept a code after its 60 seconds', async () => {
    const parties = await ssoParties(service);
    const { code } = await issuedCode(parties);
    clock.advanceSeconds(61);
    const answer = await exchangeSsoCode(
      service,
      { clientId: parties.client.clientId, clientSecret: parties.clientSecret },
      code,
    );
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'invalid_grant' });
  });
});
