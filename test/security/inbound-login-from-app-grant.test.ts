import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loginTokenFor as loginTokenOf,
  refreshWithCookie,
  signInWithLoginToken,
} from '../oidc/support/inbound-login.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { completeAuthorization, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A first-party application's access token, from an ordinary sign-in in a browser, is traded through the
 * application's inbound SSO (docs/inbound-sso.md) for a main-auth session. When the user ends that
 * sign-in to applications from the security settings, or withdraws the application's consent, the
 * grant is revoked; the session made from its access token must end with it, or a thief who copied the
 * application's access token keeps a session with a 30-day refresh cookie after the owner threw the
 * application's sign-in out.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const loginTokenFor = (application: { clientId: string; clientSecret: string }, accessToken: string) =>
  loginTokenOf(service, application, accessToken);
const signInWith = (loginToken: string) => signInWithLoginToken(service, loginToken);
const refresh = (refreshCookie: string) => refreshWithCookie(service, refreshCookie);

/** The user signs in to a new first-party application in a browser of their own (the pages). */
async function signInToFirstPartyApplication(user: { email?: string | null; password: string }) {
  const { client, clientSecret } = await createTestClient(service.service.db, {
    type: 'confidential',
    firstParty: true,
  });
  const application = { clientId: client.clientId, clientSecret: clientSecret! };
  const config = await discover(service.issuer, client.clientId, clientSecret);
  const browser = new HttpBrowser(service.issuer);
  const { tokens } = await completeAuthorization(config, browser, {
    identifier: user.email!,
    password: user.password,
    parameters: { scope: 'openid roles' },
  });
  return { application, config, browser, accessToken: tokens.access_token };
}

/** Another browser of the same user signs in to the same application (consent already given). */
async function signInAgainElsewhere(
  user: { email?: string | null; password: string },
  config: Awaited<ReturnType<typeof discover>>,
) {
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: user.email!,
    password: user.password,
    consent: 'expect-none',
    parameters: { scope: 'openid roles' },
  });
  return tokens.access_token;
}

/** The status of a call of the identity API with a main-auth access token. */
async function callWith(accessToken: string): Promise<number> {
  return (await callIdentityApi(service, '/security/sessions', undefined, { token: accessToken })).status;
}

/** The user's sign-ins to applications (from another session of theirs), newest knowledge of ids. */
async function appSignInIds(ownerToken: string): Promise<string[]> {
  const listed = await callIdentityApi(service, '/security/app-sign-ins', undefined, { token: ownerToken });
  expect(listed.status).toBe(200);
  return (listed.body as { items: { id: string }[] }).items.map((item) => item.id);
}

async function endAppSignIn(ownerToken: string, id: string) {
  const ended = await callIdentityApi(
    service,
    `/security/app-sign-ins/${encodeURIComponent(id)}`,
    undefined,
    {
      token: ownerToken,
      method: 'DELETE',
    },
  );
  expect(ended.status).toBe(200);
  expect(ended.body).toEqual({ ended: true });
}

describe('an inbound SSO session made from an application’s grant ends when that grant is revoked', () => {
  it('the user ends the application’s sign-in: the inbound session’s refresh and access token are refused', async () => {
    const user = await createTestUser(service.service.db);
    const { application, accessToken } = await signInToFirstPartyApplication(user);
    const ownerToken = await mainAuthTokenFor(service, user.id);
    const [signIn] = await appSignInIds(ownerToken);
    expect(signIn).toBeDefined();

    const thief = await signInWith(await loginTokenFor(application, accessToken));
    expect(thief.status).toBe(200);
    const refreshed = await refresh(thief.refreshCookie!);
    expect(refreshed.status).toBe(200);
    expect(await callWith(thief.accessToken!)).toBe(200);

    await endAppSignIn(ownerToken, signIn!);
    expect((await refresh(refreshed.refreshCookie)).status).toBe(401);
    expect(await callWith(thief.accessToken!)).toBe(401);
    // The owner's own session is left alone.
    expect(await callWith(ownerToken)).toBe(200);
  });

  it('a login token not yet used when the application’s sign-in ended starts no session', async () => {
    const user = await createTestUser(service.service.db);
    const { application, accessToken } = await signInToFirstPartyApplication(user);
    const ownerToken = await mainAuthTokenFor(service, user.id);
    const [signIn] = await appSignInIds(ownerToken);

    const loginToken = await loginTokenFor(application, accessToken);
    await endAppSignIn(ownerToken, signIn!);
    const late = await signInWith(loginToken);
    expect(late.status).toBe(401);
    expect(late.refreshCookie).toBeUndefined();
  });

  it('the user withdraws the application’s consent: the inbound session ends too', async () => {
    const user = await createTestUser(service.service.db);
    const { application, accessToken } = await signInToFirstPartyApplication(user);
    const thief = await signInWith(await loginTokenFor(application, accessToken));
    expect(thief.status).toBe(200);

    const withdrawn = await fetch(
      service.url(`/oauth/consents/${encodeURIComponent(application.clientId)}`),
      {
        method: 'DELETE',
        headers: { authorization: `Bearer ${await mainAuthTokenFor(service, user.id)}` },
      },
    );
    expect(withdrawn.status).toBeLessThan(300);
    expect((await refresh(thief.refreshCookie!)).status).toBe(401);
    expect(await callWith(thief.accessToken!)).toBe(401);
  });

  it('the inbound session of another browser’s sign-in, and every other session, is left alone', async () => {
    const user = await createTestUser(service.service.db);
    const { application, config, accessToken } = await signInToFirstPartyApplication(user);
    const ownerToken = await mainAuthTokenFor(service, user.id);
    const [ended] = await appSignInIds(ownerToken);
    const fromEnded = await signInWith(await loginTokenFor(application, accessToken));
    expect(fromEnded.status).toBe(200);
    // The same user in another browser, and that sign-in's own inbound session.
    const elsewhere = await signInAgainElsewhere(user, config);
    const kept = await signInWith(await loginTokenFor(application, elsewhere));
    expect(kept.status).toBe(200);

    await endAppSignIn(ownerToken, ended!);
    expect((await refresh(fromEnded.refreshCookie!)).status).toBe(401);
    expect((await refresh(kept.refreshCookie!)).status).toBe(200);
    expect(await callWith(kept.accessToken!)).toBe(200);
    expect(await callWith(ownerToken)).toBe(200);
  });
});
