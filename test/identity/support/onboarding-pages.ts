import { expect } from 'vitest';
import { replaceFunnel } from '../../../src/identity/auth-flow/funnel-steps.js';
import { findPasswordHash } from '../../../src/identity/passwords/password-credential.js';
import { uniqueEmail } from '../../support/fixtures.js';
import { HttpBrowser } from '../../support/http-browser.js';
import type { TestService } from '../../support/test-service.js';

/**
 * Registration and login by a code alone: an onboarding then ends by setting the account's first
 * password, which is what a copy of its cookie must no longer be able to do.
 */
export async function useCodeOnlyFunnels(service: TestService): Promise<void> {
  const codeOnly = [
    { stepId: 'phone-email', mandatory: true, order: 10 },
    { stepId: 'otp-code', mandatory: true, order: 20 },
  ];
  await replaceFunnel(service.service.db, 'registration', codeOnly, new Date());
  await replaceFunnel(service.service.db, 'login', codeOnly, new Date());
}

/** Registers through the pages, without an application: the new user, the browser and a copy of its cookies. */
export async function registerThroughPages(service: TestService, label = 'onboarding') {
  const email = uniqueEmail(label);
  const browser = new HttpBrowser(service.issuer);
  const identify = await browser.navigate('/en/auth?register=1');
  const codePage = await browser.submit(identify, { identifier: email });
  const code = service.service.developmentMessages.latestTo(email)!.code!;
  const onboarding = await browser.submit(codePage, { code });
  expect(new URL(onboarding.url).pathname).toBe('/en/auth/onboarding');
  expect(onboarding.status).toBe(200);
  // Signed in to the service itself: the session the onboarding ends with.
  expect(browser.cookieNames()).toContain('service_id_refresh_token');
  const user = await service.service.db('users').where({ email }).first();
  const copied = browser.cookieHeader(new URL(service.url('/en/auth/onboarding')));
  expect(copied).toContain('onboarding=');
  return { userId: user.id as string, email, browser, copied };
}

/** The onboarding page opened with these cookies. */
export async function openOnboardingWith(service: TestService, cookie: string) {
  const response = await fetch(service.url('/en/auth/onboarding'), { headers: { cookie } });
  return { status: response.status, html: await response.text() };
}

/** The password step posted with these cookies (the account's first password): its status. */
export async function setFirstPasswordWith(service: TestService, cookie: string): Promise<number> {
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

/** The copied cookie opens nothing and sets no password any more. */
export async function expectOnboardingEnded(
  service: TestService,
  registered: { userId: string; copied: string },
): Promise<void> {
  const page = await openOnboardingWith(service, registered.copied);
  expect(page.status).toBe(400);
  expect(page.html).toContain('onboarding_expired');
  expect(await setFirstPasswordWith(service, registered.copied)).toBe(400);
  expect(await findPasswordHash(service.service.db, registered.userId)).toBeFalsy();
}
