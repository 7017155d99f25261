import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import type { oidc } from '../support/relying-party.js';
import { buildAuthorizationRequest, completeAuthorization, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The service's own logout (POST /api/v2/identity/auth/logout) signs the browser out of the
 * applications too: the engine's session that the same browser holds ends with the main-auth session,
 * as an RP-initiated logout ends the main-auth sessions of its browser.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

type TestUser = Awaited<ReturnType<typeof createTestUser>>;

/** Signs in to an application through the pages in `browser`: the engine's session in that browser. */
async function signInToApplication(browser: HttpBrowser, user: TestUser) {
  const { client } = await createTestClient(service.service.db);
  const config = await discover(service.issuer, client.clientId);
  await completeAuthorization(config, browser, { identifier: user.email!, password: user.password });
  return config;
}

/** Signs in to the service itself through its pages in `browser`: a main-auth session and its cookie. */
async function signInToService(browser: HttpBrowser, user: TestUser) {
  const identify = await browser.navigate(service.url('/en/auth'));
  const passwordPage = await browser.submit(identify, { identifier: user.email! });
  const signedIn = await browser.submit(passwordPage, { password: user.password });
  expect(signedIn.status).toBe(200);
  expect(browser.cookieNames()).toContain('service_id_refresh_token');
}

/** An authorization with prompt=none in this browser: the code, or the error, it came back with. */
async function silentAuthorization(config: oidc.Configuration, browser: HttpBrowser) {
  const request = await buildAuthorizationRequest(config, { prompt: 'none' });
  const callback = new URL((await browser.navigate(request.url.toString())).url);
  return { code: callback.searchParams.get('code'), error: callback.searchParams.get('error') };
}

const logOut = (browser: HttpBrowser) =>
  browser.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' });

const liveSessions = async (userId: string) =>
  (await service.service.db('sessions').where({ user_id: userId, is_revoked: false })).length;

describe('POST /auth/logout in a browser signed in to applications', () => {
  it('ends the engine session of the same browser: prompt=none gets login_required', async () => {
    const user = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const config = await signInToApplication(browser, user);
    await signInToService(browser, user);
    expect(await silentAuthorization(config, browser)).toMatchObject({ code: expect.any(String) });

    const answer = await logOut(browser);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.html)).toEqual({ loggedOut: true });
    expect(await liveSessions(user.id)).toBe(0);
    expect(await silentAuthorization(config, browser)).toEqual({ code: null, error: 'login_required' });
  });

  it('leaves the engine session of another user, signed in to an application in that browser', async () => {
    const applicationUser = await createTestUser(service.service.db);
    const serviceUser = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const config = await signInToApplication(browser, applicationUser);
    await signInToService(browser, serviceUser);

    expect((await logOut(browser)).status).toBe(200);
    expect(await liveSessions(serviceUser.id)).toBe(0);
    expect(await silentAuthorization(config, browser)).toMatchObject({ code: expect.any(String) });
  });

  it('without the engine cookie (an API client) ends the main-auth session alone', async () => {
    const user = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const config = await signInToApplication(browser, user);
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
    expect(await silentAuthorization(config, browser)).toMatchObject({ code: expect.any(String) });
  });
});
