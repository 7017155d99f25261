import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectOnboardingEnded as expectEnded,
  openOnboardingWith,
  registerThroughPages as registerThroughPagesAs,
  useCodeOnlyFunnels,
} from '../identity/support/onboarding-pages.js';
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
  await useCodeOnlyFunnels(service);
});
afterAll(() => service?.close());

const registerThroughPages = () => registerThroughPagesAs(service, 'onboarding-session');
const openWith = (cookie: string) => openOnboardingWith(service, cookie);
const expectOnboardingEnded = (registered: { userId: string; copied: string }) =>
  expectEnded(service, registered);

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
