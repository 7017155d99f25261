import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { IdentityClient } from '../identity/support/identity-client.js';
import {
  loginTokenFor as loginTokenOf,
  refreshWithCookie,
  signInWithLoginToken,
} from '../oidc/support/inbound-login.js';
import { exchangeSsoCode, requestSsoCode } from '../oidc/support/sso-code.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc } from '../support/relying-party.js';
import { mainAuthToken, startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A thief holding a copied main-auth access token asks for a one-time SSO code for a first-party
 * application, has it exchanged there at once, and goes back through that application's inbound SSO
 * (docs/inbound-sso.md) to a main-auth session of their own. The code, the application's grant and a
 * QR approval all end with the copied session; the session the round trip starts must end with it too,
 * or the owner's logout or revocation leaves the thief signed in with a refresh cookie for 30 days.
 */

/** Each describe starts its own (the QR one changes the login funnel); the helpers use the current one. */
let service: TestService;

const identityApi = (path: string) => service.url(`/api/v2/identity${path}`);

const loginTokenFor = (application: { clientId: string; clientSecret: string }, accessToken: string) =>
  loginTokenOf(service, application, accessToken);
const signInWith = (loginToken: string) => signInWithLoginToken(service, loginToken);
const refresh = (refreshCookie: string) => refreshWithCookie(service, refreshCookie);

/** The service's own application: first-party, confidential, of the code flow, allowed `roles`. */
async function firstPartyApplication() {
  const { client, clientSecret } = await createTestClient(service.service.db, {
    type: 'confidential',
    firstParty: true,
  });
  return { clientId: client.clientId, clientSecret: clientSecret! };
}

/** With the copied token: a code for the application, exchanged there, and its inbound login token. */
async function roundTripThroughApplication(
  copiedToken: string,
  application: { clientId: string; clientSecret: string },
): Promise<string> {
  const asked = await requestSsoCode(service, copiedToken, {
    client_id: application.clientId,
    scope: 'openid roles',
  });
  expect(asked.status).toBe(201);
  const { code } = (await asked.json()) as { code: string };
  const exchanged = await exchangeSsoCode(service, application, code);
  expect(exchanged.status).toBe(200);
  const { access_token } = (await exchanged.json()) as { access_token: string };
  return loginTokenFor(application, access_token);
}

async function revokeFromOtherSession(userId: string, sessionId: string, user: { id: string }) {
  const other = await mainAuthToken(service, user, { sessionId: await startTestSession(service, userId) });
  const revoked = await fetch(identityApi(`/security/sessions/${sessionId}`), {
    method: 'DELETE',
    headers: { authorization: `Bearer ${other}` },
  });
  expect(revoked.status).toBe(200);
}

describe('an inbound SSO session reached from a one-time code ends with the session that asked for the code', () => {
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(() => service?.close());

  it('the owner revokes the copied session: the session the round trip started is signed out too', async () => {
    const user = await createTestUser(service.service.db);
    const application = await firstPartyApplication();
    const copied = await startTestSession(service, user.id);
    const copiedToken = await mainAuthToken(service, user, { sessionId: copied });

    const loginToken = await roundTripThroughApplication(copiedToken, application);
    const thief = await signInWith(loginToken);
    expect(thief.status).toBe(200);
    const refreshed = await refresh(thief.refreshCookie!);
    expect(refreshed.status).toBe(200);

    await revokeFromOtherSession(user.id, copied, user);
    expect((await refresh(refreshed.refreshCookie)).status).toBe(401);
  });

  it('the owner logs out: the session the round trip started is signed out too', async () => {
    const user = await createTestUser(service.service.db);
    const application = await firstPartyApplication();
    const owner = await new IdentityClient(service).login(user.email!, user.password);

    const loginToken = await roundTripThroughApplication(owner.accessToken, application);
    const thief = await signInWith(loginToken);
    expect(thief.status).toBe(200);

    const loggedOut = await fetch(identityApi('/auth/logout'), {
      method: 'POST',
      headers: { cookie: owner.refreshCookie },
    });
    expect(loggedOut.status).toBe(200);
    expect((await refresh(thief.refreshCookie!)).status).toBe(401);
  });

  it('a login token not yet used when the copied session ended starts no session', async () => {
    const user = await createTestUser(service.service.db);
    const application = await firstPartyApplication();
    const copied = await startTestSession(service, user.id);
    const copiedToken = await mainAuthToken(service, user, { sessionId: copied });

    const loginToken = await roundTripThroughApplication(copiedToken, application);
    await revokeFromOtherSession(user.id, copied, user);
    const late = await signInWith(loginToken);
    expect(late.status).toBe(401);
    expect(late.refreshCookie).toBeUndefined();
  });

  it('another session’s round trip is left alone', async () => {
    const user = await createTestUser(service.service.db);
    const application = await firstPartyApplication();
    const copied = await startTestSession(service, user.id);
    const kept = await startTestSession(service, user.id);
    await roundTripThroughApplication(await mainAuthToken(service, user, { sessionId: copied }), application);
    const loginToken = await roundTripThroughApplication(
      await mainAuthToken(service, user, { sessionId: kept }),
      application,
    );
    const signedIn = await signInWith(loginToken);
    expect(signedIn.status).toBe(200);

    await revokeFromOtherSession(user.id, copied, user);
    expect((await refresh(signedIn.refreshCookie!)).status).toBe(200);
  });
});

describe('an inbound SSO session reached from a QR sign-in on the OIDC pages ends with the approving session', () => {
  // The same trade without a code: the copied token approves a QR code shown at the application's
  // authorize in the thief's browser; the grant issued there ends with the approving session
  // (engine_session_starters), and so must the session the application's inbound SSO starts from it.
  beforeAll(async () => {
    service = await startTestService();
    await replaceFunnel(
      service.service.db,
      'login',
      [{ stepId: 'qr', mandatory: true, order: 10 }],
      service.service.clock.now(),
    );
  });
  afterAll(() => service?.close());

  it('the owner revokes the copied session: the session the round trip started is signed out too', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const copied = await startTestSession(service, user.id);
    const { client, clientSecret } = await createTestClient(db, { type: 'confidential', firstParty: true });
    const application = { clientId: client.clientId, clientSecret: clientSecret! };
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const browser = new HttpBrowser(service.issuer);
    const request = await buildAuthorizationRequest(config, { scope: 'openid roles' });
    const page = await browser.navigate(request.url.toString());
    const qrToken = /#token=([A-Za-z0-9_%-]+)/.exec(page.html)?.[1];
    expect(qrToken, page.html.slice(0, 2000)).toBeDefined();
    const approved = await fetch(identityApi('/auth/qr/approve'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${await mainAuthToken(service, user, { sessionId: copied })}`,
      },
      body: JSON.stringify({ token: decodeURIComponent(qrToken!) }),
    });
    expect(approved.status).toBe(200);
    let answer = await browser.submit(page, {});
    if (answer.html.includes('name="decision"')) answer = await browser.submit(answer, { decision: 'allow' });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(answer.url), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    const thief = await signInWith(await loginTokenFor(application, tokens.access_token));
    expect(thief.status).toBe(200);

    await revokeFromOtherSession(user.id, copied, user);
    expect((await refresh(thief.refreshCookie!)).status).toBe(401);
  });
});
