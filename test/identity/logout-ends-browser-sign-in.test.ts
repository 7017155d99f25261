import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, oidc, silentAuthorization } from '../support/relying-party.js';
import { authorizeTwiceWithoutRefreshTokens, signInToNewApplication } from '../support/sign-in.js';
import { introspectAs } from '../support/resource-server-calls.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The service's own logout (POST /api/v2/identity/auth/logout) signs the browser out of the
 * applications too: the engine's session that the same browser holds ends with the main-auth session,
 * as an RP-initiated logout ends the main-auth sessions of its browser, and the grants of that engine
 * session (the applications' refresh tokens, and the access tokens issued from them) are revoked.
 */

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

const introspect = (token: string) => introspectAs(service, resourceServer, token);

type TestUser = Awaited<ReturnType<typeof createTestUser>>;

/** The application's tokens: whether its refresh token still refreshes and its access token is active. */
async function expectApplicationTokens(
  { config, tokens }: Pick<Awaited<ReturnType<typeof signInToNewApplication>>, 'config' | 'tokens'>,
  alive: boolean,
) {
  if (alive) {
    expect(await introspect(tokens.access_token)).toMatchObject({ active: true });
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toEqual(expect.any(String));
  } else {
    expect(await introspect(tokens.access_token)).toEqual({ active: false });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  }
}

/** Signs in to the service itself through its pages in `browser`: a main-auth session and its cookie. */
async function signInToService(browser: HttpBrowser, user: TestUser) {
  const identify = await browser.navigate(service.url('/en/auth'));
  const passwordPage = await browser.submit(identify, { identifier: user.email! });
  const signedIn = await browser.submit(passwordPage, { password: user.password });
  expect(signedIn.status).toBe(200);
  expect(browser.cookieNames()).toContain('service_id_refresh_token');
}

const logOut = (browser: HttpBrowser) =>
  browser.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' });

const liveSessions = async (userId: string) =>
  (await service.service.db('sessions').where({ user_id: userId, is_revoked: false })).length;

describe('POST /auth/logout in a browser signed in to applications', () => {
  it('ends the engine session of the same browser: prompt=none gets login_required', async () => {
    const user = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const { config } = await signInToNewApplication(service, browser, user);
    await signInToService(browser, user);
    expect(await silentAuthorization(config, browser)).toMatchObject({ code: expect.any(String) });

    const answer = await logOut(browser);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.html)).toEqual({ loggedOut: true });
    expect(await liveSessions(user.id)).toBe(0);
    expect(await silentAuthorization(config, browser)).toEqual({ code: null, error: 'login_required' });
  });

  it('revokes the grants of that engine session, not those of the same user in another browser', async () => {
    const user = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const first = await signInToNewApplication(service, browser, user);
    const second = await signInToNewApplication(service, browser, user);
    // The same user signed in to the first application in another browser: another engine session.
    const elsewhere = {
      config: first.config,
      tokens: (
        await completeAuthorization(first.config, new HttpBrowser(service.issuer), {
          identifier: user.email!,
          password: user.password,
          consent: 'expect-none',
        })
      ).tokens,
    };
    await signInToService(browser, user);
    // The first application authorizes again here: the engine session now names that new grant only,
    // yet the first grant's tokens were obtained in this browser too.
    expect(await silentAuthorization(first.config, browser)).toMatchObject({ code: expect.any(String) });

    expect((await logOut(browser)).status).toBe(200);
    await expectApplicationTokens(first, false);
    await expectApplicationTokens(second, false);
    await expectApplicationTokens(elsewhere, true);
    // Consents stay, as at an RP-initiated logout: signing in again asks for the password alone.
    await completeAuthorization(first.config, browser, {
      identifier: user.email!,
      password: user.password,
      consent: 'expect-none',
    });
  });

  it('revokes every grant issued in that browser, for an application without refresh tokens too', async () => {
    const browser = new HttpBrowser(service.issuer);
    // The engine session names only the second grant; the first grant's access token, which no refresh
    // token leads to, was obtained in this browser as well.
    const { user, first, again } = await authorizeTwiceWithoutRefreshTokens(service, browser);
    await signInToService(browser, user);
    expect(await introspect(first)).toMatchObject({ active: true });

    expect((await logOut(browser)).status).toBe(200);
    expect(await introspect(first)).toEqual({ active: false });
    expect(await introspect(again)).toEqual({ active: false });
  });

  it('leaves the engine session of another user, signed in to an application in that browser', async () => {
    const applicationUser = await createTestUser(service.service.db);
    const serviceUser = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const application = await signInToNewApplication(service, browser, applicationUser);
    await signInToService(browser, serviceUser);

    expect((await logOut(browser)).status).toBe(200);
    expect(await liveSessions(serviceUser.id)).toBe(0);
    expect(await silentAuthorization(application.config, browser)).toMatchObject({
      code: expect.any(String),
    });
    await expectApplicationTokens(application, true);
  });

  it('without the engine cookie (an API client) ends the main-auth session alone', async () => {
    const user = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const application = await signInToNewApplication(service, browser, user);
    await signInToService(browser, user);

    // Only the refresh cookie, as an application of the service's own holds it.
    const logout = new URL(service.url('/api/v2/identity/auth/logout'));
    const refreshCookie = browser
      .cookieHeader(logout)
      .split('; ')
      .filter((cookie) => cookie.startsWith('service_id_refresh_token='))
      .join('; ');
    const answer = await fetch(logout, { method: 'POST', headers: { cookie: refreshCookie } });
    expect(answer.status).toBe(200);
    expect(await liveSessions(user.id)).toBe(0);
    expect(await silentAuthorization(application.config, browser)).toMatchObject({
      code: expect.any(String),
    });
    await expectApplicationTokens(application, true);
  });
});
