import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, silentAuthorization } from '../support/relying-party.js';
import { signInToNewApplication } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A thief who copied the engine's session cookie (`_session`) and consented with it to an application
 * holds the session under a new id (same uid); the owner's browser keeps the old, ended id. The owner's
 * next authorization there finds no session, so the owner signs in again: the engine starts a session
 * with a new uid in that browser. The owner's logout then ended that new session only, and the
 * thief's copy, of the uid the owner's browser held before, went on signing in to every application.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

/**
 * The owner signs in to an application; a thief copies the browser's cookies and consents with the copy
 * to another application (a new id); the owner's browser, which lost its session, signs in again.
 */
async function thiefRenamedThenOwnerSignedInAgain() {
  const user = await createTestUser(service.service.db);
  const owner = new HttpBrowser(service.issuer);
  const application = await signInToNewApplication(service, owner, user);
  const thief = owner.copy();
  const { client } = await createTestClient(service.service.db, { name: 'Another application' });
  const another = await discover(service.issuer, client.clientId);
  await completeAuthorization(another, thief, {
    identifier: user.email!,
    password: 'the thief does not know it',
    consent: 'allow',
  });
  expect(await silentAuthorization(application.config, thief)).toMatchObject({ code: expect.any(String) });
  expect(await silentAuthorization(application.config, owner)).toEqual({
    code: null,
    error: 'login_required',
  });
  await completeAuthorization(application.config, owner, {
    identifier: user.email!,
    password: user.password,
    consent: 'expect-none',
  });
  return { user, owner, thief, application };
}

describe('a copied engine session renamed by a consent, then the owner signs in again', () => {
  it('the owner’s logout in that browser ends the thief’s copy too', async () => {
    const { user, owner, thief, application } = await thiefRenamedThenOwnerSignedInAgain();
    const identify = await owner.navigate(service.url('/en/auth'));
    const passwordPage = await owner.submit(identify, { identifier: user.email! });
    expect((await owner.submit(passwordPage, { password: user.password })).status).toBe(200);
    const answer = await owner.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' });
    expect(JSON.parse(answer.html)).toEqual({ loggedOut: true });

    expect(await silentAuthorization(application.config, owner)).toEqual({
      code: null,
      error: 'login_required',
    });
    expect(await silentAuthorization(application.config, thief)).toEqual({
      code: null,
      error: 'login_required',
    });
  });

  it('an RP-initiated logout confirmed in the owner’s browser does the same', async () => {
    const { owner, thief, application } = await thiefRenamedThenOwnerSignedInAgain();
    const logout = `${service.url('/oauth/end_session')}?${new URLSearchParams({ client_id: application.clientId })}`;
    const page = await owner.navigate(logout);
    expect((await owner.submit(page, {})).status).toBe(200);

    expect(await silentAuthorization(application.config, thief)).toEqual({
      code: null,
      error: 'login_required',
    });
  });

  it('another user’s logout in that browser ends nothing of the owner’s', async () => {
    const { owner, thief, application } = await thiefRenamedThenOwnerSignedInAgain();
    const someoneElse = await createTestUser(service.service.db);
    const identify = await owner.navigate(service.url('/en/auth'));
    const passwordPage = await owner.submit(identify, { identifier: someoneElse.email! });
    expect((await owner.submit(passwordPage, { password: someoneElse.password })).status).toBe(200);
    await owner.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' });
    expect(await silentAuthorization(application.config, thief)).toMatchObject({ code: expect.any(String) });
  });
});
