import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc, silentAuthorization } from '../support/relying-party.js';
import { signInToNewApplication } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The engine gives its session a new id whenever a browser comes back from the sign-in pages (any
 * interaction: a consent too), keeping its uid, and the old id ends. A thief who copied the engine's
 * session cookie (`_session`) from a browser signed in to applications, and then went through one
 * interaction with it (consenting to another application: no password asked), held the session under
 * a new id, and the owner's browser the old, ended one. The owner's logout there (POST /auth/logout,
 * which ends the engine session the browser's cookie names) found that id ended and ended nothing: the
 * thief went on signing in to every application silently, and kept the grants issued there, for the
 * session's 30 days.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

type TestUser = Awaited<ReturnType<typeof createTestUser>>;

/** Signs in to the service itself through its pages in `browser`: a main-auth session and its cookie. */
async function signInToService(browser: HttpBrowser, user: TestUser) {
  const identify = await browser.navigate(service.url('/en/auth'));
  const passwordPage = await browser.submit(identify, { identifier: user.email! });
  const signedIn = await browser.submit(passwordPage, { password: user.password });
  expect(signedIn.status).toBe(200);
}

/**
 * The owner signs in to an application and to the service in one browser; a thief copies its cookies
 * and signs in with the copy to another application, consenting to it: its engine session gets a new id.
 */
async function ownerAndThief() {
  const user = await createTestUser(service.service.db);
  const owner = new HttpBrowser(service.issuer);
  const application = await signInToNewApplication(service, owner, user);
  await signInToService(owner, user);
  const thief = owner.copy();
  const { client } = await createTestClient(service.service.db, { name: 'Another application' });
  const another = await discover(service.issuer, client.clientId);
  const { tokens } = await completeAuthorization(another, thief, {
    identifier: user.email!,
    password: 'the thief does not know it',
    consent: 'allow',
  });
  // The thief's copy is signed in, under the engine session's new id.
  expect(await silentAuthorization(application.config, thief)).toMatchObject({ code: expect.any(String) });
  return { user, owner, thief, application, another: { config: another, tokens } };
}

describe('a copied engine session cookie that got a new id ends with the owner’s logout', () => {
  it('the logout in the owner’s browser signs the thief’s copy out of the applications', async () => {
    const { owner, thief, application, another } = await ownerAndThief();
    const answer = await owner.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' });
    expect(JSON.parse(answer.html)).toEqual({ loggedOut: true });

    expect(await silentAuthorization(application.config, thief)).toEqual({
      code: null,
      error: 'login_required',
    });
    expect(await silentAuthorization(another.config, thief)).toEqual({ code: null, error: 'login_required' });
    // The grant the thief got there is revoked with it.
    await expect(oidc.refreshTokenGrant(another.config, another.tokens.refresh_token!)).rejects.toMatchObject(
      {
        error: 'invalid_grant',
      },
    );
  });

  it('an RP-initiated logout confirmed in the owner’s browser does the same', async () => {
    const { owner, thief, application, another } = await ownerAndThief();
    const logout = `${service.url('/oauth/end_session')}?${new URLSearchParams({ client_id: application.clientId })}`;
    const page = await owner.navigate(logout);
    expect((await owner.submit(page, {})).status).toBe(200);

    expect(await silentAuthorization(application.config, thief)).toEqual({
      code: null,
      error: 'login_required',
    });
    await expect(oidc.refreshTokenGrant(another.config, another.tokens.refresh_token!)).rejects.toMatchObject(
      {
        error: 'invalid_grant',
      },
    );
  });

  it('another user’s logout in a browser holding such an old id ends nothing of the owner’s', async () => {
    const { owner, thief, application } = await ownerAndThief();
    // Someone else signs in to the service in the owner's browser and logs out: not the owner's sign-in.
    const someoneElse = await createTestUser(service.service.db);
    await signInToService(owner, someoneElse);
    await owner.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' });
    expect(await silentAuthorization(application.config, thief)).toMatchObject({ code: expect.any(String) });
  });
});
