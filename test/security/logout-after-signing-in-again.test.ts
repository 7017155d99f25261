import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A thief copies the refresh cookie of a browser signed in to the service, and waits (refreshing would
 * make the owner's next refresh a replay, which ends the session). The owner signs in again in that
 * browser: a new session, whose cookie replaces the old one; the old session lives on in the copy. The
 * owner's logout there then ended the new session only, and the thief refreshed the old one for up to
 * 30 days. The refresh cookie is sent to the refresh and logout endpoints only, so a sign-in can't see
 * it; the sessions a browser started share its device binding, and the logout ends them all.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

type TestUser = Awaited<ReturnType<typeof createTestUser>>;

async function signInToService(browser: HttpBrowser, user: TestUser) {
  const identify = await browser.navigate(service.url('/en/auth'));
  const passwordPage = await browser.submit(identify, { identifier: user.email! });
  expect((await browser.submit(passwordPage, { password: user.password })).status).toBe(200);
}

const refresh = (browser: HttpBrowser) =>
  browser.request(service.url('/api/v2/identity/auth/refresh'), { method: 'POST' });
const logOut = (browser: HttpBrowser) =>
  browser.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' });

describe('the owner signs in again in the browser whose refresh cookie was copied, then logs out', () => {
  it('the copy’s session ends with the logout', async () => {
    const user = await createTestUser(service.service.db);
    const owner = new HttpBrowser(service.issuer);
    await signInToService(owner, user);
    const thief = owner.copy();
    await signInToService(owner, user);
    expect(JSON.parse((await logOut(owner)).html)).toEqual({ loggedOut: true });

    expect((await refresh(thief)).status).toBe(401);
  });

  it('another user’s logout in that browser ends nothing of the owner’s', async () => {
    const user = await createTestUser(service.service.db);
    const owner = new HttpBrowser(service.issuer);
    await signInToService(owner, user);
    const elsewhere = owner.copy();
    await signInToService(owner, await createTestUser(service.service.db));
    await logOut(owner);

    expect((await refresh(elsewhere)).status).toBe(200);
  });
});
