import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateClient } from '../../src/oidc/models/oauth-client.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, signInThroughPages } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * RP-initiated logout: the engine checks post_logout_redirect_uri when the logout is asked for, keeps
 * it with the session, and sends the browser there when the logout is confirmed. A URI an
 * administrator took from the client in between (a lapsed domain, an attacker's address) must not
 * get the browser, and the state, after the confirmation.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const kept = 'https://app.example.com/signed-out';
const removed = 'https://lapsed.example.com/signed-out';

async function logoutAskedFor(postLogoutRedirectUri: string) {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client } = await createTestClient(db, { postLogoutRedirectUris: [kept, removed] });
  const config = await discover(service.issuer, client.clientId);
  const browser = new HttpBrowser(service.issuer);
  await signInThroughPages(browser, (await buildAuthorizationRequest(config)).url, {
    identifier: user.email!,
    password: user.password,
  });
  const query = new URLSearchParams({
    client_id: client.clientId,
    post_logout_redirect_uri: postLogoutRedirectUri,
    state: 'rp-state',
  });
  const page = await browser.navigate(service.url(`/oauth/end_session?${query}`));
  const xsrf = new URLSearchParams(new URL(page.url).hash.slice(1)).get('xsrf');
  expect(xsrf).toBeTruthy();
  await updateClient(db, client.clientId, { postLogoutRedirectUris: [kept] }, new Date());
  const confirmed = await browser.request(service.url('/oauth/end_session/confirm'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf: xsrf!, logout: 'yes' }).toString(),
  });
  return { confirmed, browser };
}

describe('a post-logout redirect URI removed before the logout is confirmed', () => {
  it('signs out, and ends on the signed-out page instead of redirecting there', async () => {
    const { confirmed } = await logoutAskedFor(removed);
    expect(confirmed.url.startsWith(removed)).toBe(false);
    expect(confirmed.url).toBe(service.url('/oauth/end_session/success'));
    expect(confirmed.status).toBe(200);
  });

  it('a URI still registered gets the browser and the state as before', async () => {
    const { confirmed } = await logoutAskedFor(kept);
    expect(confirmed.url).toBe(`${kept}?state=rp-state`);
  });
});
