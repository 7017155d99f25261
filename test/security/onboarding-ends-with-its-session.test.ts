import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A registration through the service's own pages (no application) starts a main-auth session, with
 * its refresh cookie, and an onboarding whose cookie names the account, changes its photo and gives an
 * account registered by a code alone its first password. Ending that session (the logout of a person
 * who registered on a shared computer, or the revocation of the session from another device) must end
 * the onboarding it began too: before, the onboarding cookie (or a copy of it) went on acting for its
 * half hour, and whoever held it set a password of their choosing on the account, and so kept it.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  // Registration by a code alone: the onboarding's last step sets the account's first password.
  const codeOnly = [
    { stepId: 'phone-email', mandatory: true, order: 10 },
    { stepId: 'otp-code', mandatory: true, order: 20 },
  ];
  await replaceFunnel(service.service.db, 'registration', codeOnly, new Date());
  await replaceFunnel(service.service.db, 'login', codeOnly, new Date());
});
afterAll(() => service?.close());

/** Registers through the pages, without an application: the browser, and a copy of its onboarding cookie. */
async function registerThroughPages() {
  const email = uniqueEmail('onboarding-session');
  const browser = new HttpBrowser(service.issuer);
  const identify = await browser.navigate('/en/auth?register=1');
  const codePage = await browser.submit(identify, { identifier: email });
  const code = service.service.developmentMessages.latestTo(email)!.code!;
  const onboarding = await browser.submit(codePage, { code });
  expect(new URL(onboarding.url).pathname).toBe('/en/auth/onboarding');
  expect(browser.cookieNames()).toContain('service_id_refresh_token');
  const user = await service.service.db('users').where({ email }).first();
  const copied = browser.cookieHeader(new URL(service.url('/en/auth/onboarding')));
  expect(copied).toContain('onboarding=');
  return { userId: user.id as string, browser, copied };
}

const openWith = async (cookie: string) => {
  const response = await fetch(service.url('/en/auth/onboarding'), { headers: { cookie } });
  return { status: response.status, html: await response.text() };
};

async function setPasswordWith(cookie: string) {
  const password = 'a thief chose this passphrase';
  const response = await fetch(service.url('/en/auth/onboarding/password'), {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ password, passwordConfirmation: password }).toString(),
    redirect: 'manual',
  });
  await response.body?.cancel();
  return response.status;
}

async function expectOnboardingEnded(registered: { userId: string; copied: string }) {
  const page = await openWith(registered.copied);
  expect(page.status).toBe(400);
  expect(page.html).toContain('onboarding_expired');
  expect(await setPasswordWith(registered.copied)).toBe(400);
  expect(await findPasswordHash(service.service.db, registered.userId)).toBeFalsy();
}

describe('an onboarding ends with the session its registration started', () => {
  it('lives while that session does', async () => {
    const registered = await registerThroughPages();
    expect((await openWith(registered.copied)).status).toBe(200);
  });

  it('the logout of that browser (POST /auth/logout) ends it', async () => {
    const registered = await registerThroughPages();
    const loggedOut = await registered.browser.request(service.url('/api/v2/identity/auth/logout'), {
      method: 'POST',
    });
    expect(JSON.parse(loggedOut.html)).toEqual({ loggedOut: true });
    await expectOnboardingEnded(registered);
  });

  it('revoking that session from another device ends it', async () => {
    const registered = await registerThroughPages();
    const [session] = await service.service
      .db('sessions')
      .where({ user_id: registered.userId, is_revoked: false });
    // The owner, signed in elsewhere, throws the registration's session out from the security settings.
    const token = await mainAuthTokenFor(service, registered.userId);
    const revoked = await callIdentityApi(service, `/security/sessions/${session.id as string}`, undefined, {
      token,
      method: 'DELETE',
    });
    expect(revoked.status).toBe(200);
    await expectOnboardingEnded(registered);
  });

  it('ending another session of the user leaves it', async () => {
    const registered = await registerThroughPages();
    const elsewhere = await startTestSession(service, registered.userId);
    const token = await mainAuthTokenFor(service, registered.userId, { sessionId: elsewhere });
    const revoked = await callIdentityApi(service, `/security/sessions/${elsewhere}`, undefined, {
      token,
      method: 'DELETE',
    });
    expect(revoked.status).toBe(200);
    expect((await openWith(registered.copied)).status).toBe(200);
  });
});
