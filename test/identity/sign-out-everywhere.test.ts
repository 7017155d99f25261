import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQrLoginRequest } from '../../src/identity/qr-login/qr-login-requests.js';
import { saveConsent } from '../../src/oidc/models/consent.js';
import { createServiceClient, createTestClient, createTestUser } from '../support/fixtures.js';
import { bearerCall } from '../support/bearer-call.js';
import { HttpBrowser } from '../support/http-browser.js';
import { exchangeSsoCode, requestSsoCode } from '../oidc/support/sso-code.js';
import { requestLoginToken } from '../oidc/support/inbound-login.js';
import { callIdentityApi, mainAuthTokenFor, uniqueIp } from '../support/identity-api-client.js';
import {
  buildAuthorizationRequest,
  completeAuthorization,
  discover,
  oidc,
} from '../support/relying-party.js';
import { mainAuthToken, userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { introspectAs, userinfoStatus as userinfoStatusOf } from '../support/resource-server-calls.js';

/**
 * A password change or reset, "sign out everywhere" and the administrator's revoke-sessions (and a
 * disable) end what the user signed in to through the OIDC pages too: the provider's session in every
 * browser, every application's refresh tokens, the access tokens issued from them and codes not yet
 * redeemed. The consents stay.
 */

let service: TestService;
/** A resource server: a service client, which may introspect every client's access tokens. */
let resourceServer: { clientId: string; secret: string };
let adminToken: string;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  const { client, clientSecret } = await createServiceClient(service.service.db, [
    'service:crm.aggregates.read',
  ]);
  resourceServer = { clientId: client.clientId, secret: clientSecret! };
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

const introspect = (token: string) => introspectAs(service, resourceServer, token);
const userinfoStatus = (token: string) => userinfoStatusOf(service, token);

/** An administrator's POST to the admin API: its status. */
const adminCall = async (path: string) =>
  (await bearerCall(service, 'POST', `/api/v2/admin${path}`, adminToken)).status;

/** An authorization with prompt=none in this browser: where the provider sent it back, and how to redeem. */
async function silentAuthorization(config: oidc.Configuration, browser: HttpBrowser) {
  const request = await buildAuthorizationRequest(config, { prompt: 'none' });
  const callback = new URL((await browser.navigate(request.url.toString())).url);
  const redeem = () =>
    oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
  return { callback, redeem };
}

/**
 * Sign-ins the user began but nobody finished yet, each of which would start a session: a one-time
 * SSO code for a client (POST /oauth/sso/otc), an inbound-SSO login token (POST /oauth/sso/inbound)
 * and a QR sign-in the user approved that the waiting device has not taken.
 */
async function beginSignInsElsewhere(user: { id: string; email: string | null; password: string }) {
  const { db, clock } = service.service;
  const mainAuth = await mainAuthTokenFor(service, user.id);
  const otcClient = await createTestClient(db, { type: 'confidential' });
  // A third-party client gets a code only once the user consented to it.
  await saveConsent(db, user.id, otcClient.client.clientId, ['openid'], clock.now());
  const otc = await requestSsoCode(service, mainAuth, { client_id: otcClient.client.clientId });
  expect(otc.status).toBe(201);
  const { code } = (await otc.json()) as { code: string };

  const firstParty = await createTestClient(db, { type: 'confidential', firstParty: true });
  const firstPartyClient = { clientId: firstParty.client.clientId, clientSecret: firstParty.clientSecret! };
  const config = await discover(service.issuer, firstPartyClient.clientId, firstPartyClient.clientSecret);
  // Granted roles: only a token carrying the user's authority becomes an inbound session.
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: user.email!,
    password: user.password,
    parameters: { scope: 'openid roles' },
  });
  const inbound = await requestLoginToken(service, firstPartyClient, { access_token: tokens.access_token });
  expect(inbound.status).toBe(201);
  const { login_token: loginToken } = (await inbound.json()) as { login_token: string };

  const qr = await createQrLoginRequest(db, clock.now(), { ip: uniqueIp(), userAgent: 'test' });
  const approved = await callIdentityApi(
    service,
    '/auth/qr/approve',
    { token: qr.token },
    { token: mainAuth },
  );
  expect(approved.status).toBe(200);

  return {
    redeemSsoCode: async () => {
      const answer = await exchangeSsoCode(
        service,
        { clientId: otcClient.client.clientId, clientSecret: otcClient.clientSecret! },
        code,
      );
      return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
    },
    useLoginToken: () => callIdentityApi(service, '/auth/inbound', { loginToken }),
    qrStatus: async () => (await callIdentityApi(service, '/auth/qr/status', { token: qr.token })).body,
  };
}

/**
 * A user signed in to an application through the pages, with its tokens, a code the application got
 * silently afterwards (prompt=none: the provider's session is live) and has not redeemed yet, and
 * sign-ins begun elsewhere (beginSignInsElsewhere).
 */
async function signedInEverywhere() {
  const signedIn = await userWithTokens(service);
  const { tokens, config, browser } = signedIn;
  expect(await introspect(tokens.access_token)).toMatchObject({ active: true });
  expect(await userinfoStatus(tokens.access_token)).toBe(200);
  const pending = await silentAuthorization(config, browser);
  expect(pending.callback.searchParams.get('code')).toBeTruthy();
  const begun = await beginSignInsElsewhere(signedIn.user);
  return { ...signedIn, pending, begun };
}

/** Everything the OIDC sign-in gave is dead; signing in again needs the password but no new consent. */
async function expectSignedOutOfApplications(
  signedIn: Awaited<ReturnType<typeof signedInEverywhere>>,
  password: string,
) {
  const { tokens, config, browser, pending, user, begun } = signedIn;
  await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
    error: 'invalid_grant',
  });
  // Sign-ins begun before the change don't finish after it.
  expect(await begun.redeemSsoCode()).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  expect(await begun.useLoginToken()).toMatchObject({ status: 401, body: { error: 'invalid_login_token' } });
  expect(await begun.qrStatus()).toEqual({ status: 'expired' });
  expect(await introspect(tokens.access_token)).toEqual({ active: false });
  expect(await userinfoStatus(tokens.access_token)).toBe(401);
  await expect(pending.redeem()).rejects.toMatchObject({ error: 'invalid_grant' });
  const silent = await silentAuthorization(config, browser);
  expect(silent.callback.searchParams.get('error')).toBe('login_required');
  expect(silent.callback.searchParams.get('code')).toBeNull();
  // The consent is not a session: signing in again asks for the password, not for consent.
  const again = await completeAuthorization(config, browser, {
    identifier: user.email!,
    password,
    consent: 'expect-none',
  });
  expect(await userinfoStatus(again.tokens.access_token)).toBe(200);
}

const newPassword = 'a brand new passphrase for everywhere';

describe('ending every session of a user also ends their OIDC sign-ins', () => {
  it('a password change: the applications sign out, the session making the change stays', async () => {
    const signedIn = await signedInEverywhere();
    const token = await mainAuthTokenFor(service, signedIn.user.id);
    const answer = await callIdentityApi(
      service,
      '/auth/password/change',
      {
        currentPassword: signedIn.user.password,
        newPassword,
        newPasswordConfirmation: newPassword,
      },
      { token, ip: uniqueIp() },
    );
    // The browser's and the first-party client's sign-ins, and the main-auth session that asked the code.
    expect(answer).toMatchObject({ status: 200, body: { status: 'password_changed', revokedSessions: 3 } });
    expect((await callIdentityApi(service, '/security/sessions', undefined, { token })).status).toBe(200);
    await expectSignedOutOfApplications(signedIn, newPassword);
  });

  it('a password reset', async () => {
    const signedIn = await signedInEverywhere();
    const identifier = signedIn.user.email!;
    const ip = uniqueIp();
    expect((await callIdentityApi(service, '/auth/password/forgot', { identifier }, { ip })).status).toBe(
      200,
    );
    const code = service.service.developmentMessages.latestTo(identifier)!.code!;
    const answer = await callIdentityApi(
      service,
      '/auth/password/reset',
      { identifier, code, password: newPassword, passwordConfirmation: newPassword },
      { ip },
    );
    expect(answer).toMatchObject({ status: 200, body: { status: 'password_reset', revokedSessions: 3 } });
    await expectSignedOutOfApplications(signedIn, newPassword);
  });

  it('"sign out everywhere": the applications sign out, the current session stays', async () => {
    const signedIn = await signedInEverywhere();
    const token = await mainAuthTokenFor(service, signedIn.user.id);
    const answer = await callIdentityApi(service, '/security/sessions/revoke-all', {}, { token });
    expect(answer).toMatchObject({ status: 200, body: { revokedCount: 3 } });
    expect((await callIdentityApi(service, '/security/sessions', undefined, { token })).status).toBe(200);
    await expectSignedOutOfApplications(signedIn, signedIn.user.password);
  });

  it('an administrator revokes the user’s sessions', async () => {
    const signedIn = await signedInEverywhere();
    expect(await adminCall(`/users/${signedIn.user.id}/revoke-sessions`)).toBe(200);
    await expectSignedOutOfApplications(signedIn, signedIn.user.password);
  });

  it('an administrator disables the user: enabled again, the old tokens and sessions stay dead', async () => {
    const signedIn = await signedInEverywhere();
    expect(await adminCall(`/users/${signedIn.user.id}/disable`)).toBe(200);
    expect(await adminCall(`/users/${signedIn.user.id}/enable`)).toBe(200);
    await expectSignedOutOfApplications(signedIn, signedIn.user.password);
  });

  it('an authorization in flight when the sessions end brings none of them back', async () => {
    const signedIn = await signedInEverywhere();
    const { provider } = service.service;
    const { user, client, config, browser } = signedIn;
    // What an authorize request with the browser's cookie holds while it runs: the session it read.
    const sessionId = browser
      .cookieHeader(new URL(service.url('/oauth/authorize')))
      .match(/(?:^|; )_session=([^;]+)/)![1]!;
    const inFlight = (await provider.Session.find(sessionId))!;
    expect(inFlight.accountId).toBe(user.id);
    expect(await adminCall(`/users/${user.id}/revoke-sessions`)).toBe(200);

    // The request finishes after the revocation: a grant from the consent and a code
    // (loadGrantFromConsent, the engine's code response), then the session saved back.
    const grant = new provider.Grant({ accountId: user.id, clientId: client.clientId });
    grant.addOIDCScope('openid');
    const request = await buildAuthorizationRequest(config);
    const code = await new provider.AuthorizationCode({
      accountId: user.id,
      clientId: client.clientId,
      grantId: await grant.save(),
      sessionUid: inFlight.uid,
      authTime: inFlight.authTime(),
      redirectUri: request.url.searchParams.get('redirect_uri')!,
      scope: 'openid',
      nonce: request.nonce,
      codeChallenge: request.url.searchParams.get('code_challenge')!,
      codeChallengeMethod: 'S256',
    } as never).save();
    await inFlight.save(3600);

    const callback = new URL(request.url.searchParams.get('redirect_uri')!);
    callback.searchParams.set('code', code);
    callback.searchParams.set('state', request.state);
    callback.searchParams.set('iss', service.issuer);
    await expect(
      oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
    const silent = await silentAuthorization(config, browser);
    expect(silent.callback.searchParams.get('error')).toBe('login_required');
  });

  it('a sign-in on the pages that passed the old password but has not come back for its code', async () => {
    const { user, config } = await userWithTokens(service);
    const browser = new HttpBrowser(service.issuer);
    const request = await buildAuthorizationRequest(config);
    const identify = await browser.navigate(request.url.toString());
    const passwordPage = await browser.submit(identify, { identifier: user.email! });
    // Its answer sends the browser back to the engine for the code: a browser that holds it there.
    const { location: resume } = await browser.submitWithoutFollowing(passwordPage, {
      password: user.password,
    });

    const token = await mainAuthTokenFor(service, user.id);
    expect((await callIdentityApi(service, '/security/sessions/revoke-all', {}, { token })).status).toBe(200);
    const landed = await browser.navigate(resume);
    expect(new URL(landed.url).searchParams.get('code')).toBeNull();
  });

  it('leaves other users alone', async () => {
    const bystander = await signedInEverywhere();
    const other = await signedInEverywhere();
    expect(await adminCall(`/users/${other.user.id}/revoke-sessions`)).toBe(200);
    expect(await introspect(bystander.tokens.access_token)).toMatchObject({ active: true });
    const refreshed = await oidc.refreshTokenGrant(bystander.config, bystander.tokens.refresh_token!);
    expect(refreshed.access_token).toBeTruthy();
    expect((await bystander.pending.redeem()).access_token).toBeTruthy();
    expect((await bystander.begun.redeemSsoCode()).status).toBe(200);
    expect(await bystander.begun.qrStatus()).toEqual({ status: 'approved' });
    expect((await bystander.begun.useLoginToken()).status).toBe(200);
    const silent = await silentAuthorization(bystander.config, bystander.browser);
    expect(silent.callback.searchParams.get('code')).toBeTruthy();
  });
});
