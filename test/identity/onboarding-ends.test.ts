import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { bearerCall } from '../support/bearer-call.js';
import { HttpBrowser } from '../support/http-browser.js';
import { callIdentityApi, mainAuthTokenFor, uniqueIp } from '../support/identity-api-client.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The onboarding cookie a registration through the pages sets lets its holder name the account, give
 * it a photo and, for an account registered by a code alone, its first password: a copy of it must die
 * with the user's sessions ("sign out everywhere", a password reset, an administrator's revocation or
 * disable), as every other sign-in artefact does (docs/security.md, "Signed out everywhere").
 */

let service: TestService;
let adminToken: string;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  // Registration by a code alone: the onboarding's last step sets the account's first password.
  const codeOnly = [
    { stepId: 'phone-email', mandatory: true, order: 10 },
    { stepId: 'otp-code', mandatory: true, order: 20 },
  ];
  await replaceFunnel(service.service.db, 'registration', codeOnly, new Date());
  await replaceFunnel(service.service.db, 'login', codeOnly, new Date());
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

/** Registers through the pages; answers the new user's id and a copy of the browser's cookies. */
async function registerThroughPages() {
  const email = uniqueEmail('onboarding');
  const browser = new HttpBrowser(service.issuer);
  const identify = await browser.navigate('/en/auth?register=1');
  const codePage = await browser.submit(identify, { identifier: email });
  const code = service.service.developmentMessages.latestTo(email)!.code!;
  const onboarding = await browser.submit(codePage, { code });
  expect(new URL(onboarding.url).pathname).toBe('/en/auth/onboarding');
  expect(onboarding.status).toBe(200);
  const user = await service.service.db('users').where({ email }).first();
  const copied = browser.cookieHeader(new URL(service.url('/en/auth/onboarding')));
  expect(copied).toContain('onboarding=');
  return { userId: user.id as string, email, copied };
}

/** The onboarding page opened with the copied cookies. */
async function openWith(cookie: string) {
  const response = await fetch(service.url('/en/auth/onboarding'), { headers: { cookie } });
  return { status: response.status, html: await response.text() };
}

/** The password step posted with the copied cookies: the account's first password. */
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

/** An administrator's POST to the admin API: its status. */
const adminCall = async (path: string) =>
  (await bearerCall(service, 'POST', `/api/v2/admin${path}`, adminToken)).status;

/** The copied cookie opens nothing and sets no password any more. */
async function expectOnboardingEnded(registered: { userId: string; copied: string }) {
  const page = await openWith(registered.copied);
  expect(page.status).toBe(400);
  expect(page.html).toContain('onboarding_expired');
  expect(await setPasswordWith(registered.copied)).toBe(400);
  expect(await findPasswordHash(service.service.db, registered.userId)).toBeFalsy();
}

describe('a copied onboarding cookie ends with the user’s sessions', () => {
  it('works until then', async () => {
    const registered = await registerThroughPages();
    expect((await openWith(registered.copied)).status).toBe(200);
  });

  it('"sign out everywhere"', async () => {
    const registered = await registerThroughPages();
    const token = await mainAuthTokenFor(service, registered.userId);
    expect((await callIdentityApi(service, '/security/sessions/revoke-all', {}, { token })).status).toBe(200);
    await expectOnboardingEnded(registered);
  });

  it('an administrator revokes the user’s sessions', async () => {
    const registered = await registerThroughPages();
    expect(await adminCall(`/users/${registered.userId}/revoke-sessions`)).toBe(200);
    await expectOnboardingEnded(registered);
  });

  it('an administrator disables the user: enabled again, the cookie stays dead', async () => {
    const registered = await registerThroughPages();
    expect(await adminCall(`/users/${registered.userId}/disable`)).toBe(200);
    expect((await openWith(registered.copied)).status).toBe(400);
    expect(await adminCall(`/users/${registered.userId}/enable`)).toBe(200);
    await expectOnboardingEnded(registered);
  });

  it('a password reset', async () => {
    const registered = await registerThroughPages();
    // The registration just sent the address a code: its resend cooldown is not what this is about.
    await service.service.db('rate_limits').delete();
    const ip = uniqueIp();
    const identifier = registered.email;
    const forgot = await callIdentityApi(service, '/auth/password/forgot', { identifier }, { ip });
    expect(forgot.status).toBe(200);
    const code = service.service.developmentMessages.latestTo(identifier)!.code!;
    const password = 'the owner chose this passphrase';
    const reset = await callIdentityApi(
      service,
      '/auth/password/reset',
      { identifier, code, password, passwordConfirmation: password },
      { ip },
    );
    expect(reset.status).toBe(200);
    const page = await openWith(registered.copied);
    expect(page.status).toBe(400);
    expect(page.html).toContain('onboarding_expired');
  });

  it('ends at the end of onboarding: a copy taken before cannot start it again', async () => {
    const registered = await registerThroughPages();
    const headers = { cookie: registered.copied, 'content-type': 'application/x-www-form-urlencoded' };
    const post = (step: string, body: Record<string, string>) =>
      fetch(service.url(`/en/auth/onboarding/${step}`), {
        method: 'POST',
        headers,
        body: new URLSearchParams(body).toString(),
        redirect: 'manual',
      });
    expect((await post('name', { given_name: 'Ada', family_name: 'Lovelace' })).status).toBe(303);
    // The last step: the "signed in" page, and the browser's cookie is cleared.
    expect((await post('password', { skip: '1' })).status).toBe(200);
    await expectOnboardingEnded(registered);
  });
});
