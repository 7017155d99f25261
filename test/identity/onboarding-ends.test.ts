import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import { bearerCall } from '../support/bearer-call.js';
import { callIdentityApi, mainAuthTokenFor, uniqueIp } from '../support/identity-api-client.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import {
  expectOnboardingEnded as expectEnded,
  openOnboardingWith,
  registerThroughPages as registerThroughPagesAs,
  useCodeOnlyFunnels,
} from './support/onboarding-pages.js';

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
  await useCodeOnlyFunnels(service);
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

const registerThroughPages = () => registerThroughPagesAs(service);
const openWith = (cookie: string) => openOnboardingWith(service, cookie);
const expectOnboardingEnded = (registered: { userId: string; copied: string }) =>
  expectEnded(service, registered);

/** An administrator's POST to the admin API: its status. */
const adminCall = async (path: string) =>
  (await bearerCall(service, 'POST', `/api/v2/admin${path}`, adminToken)).status;

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
