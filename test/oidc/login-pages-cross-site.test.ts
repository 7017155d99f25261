import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import { HttpBrowser, pageText, type Page } from '../support/http-browser.js';
import { callIdentityApi } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

/** The password form of the service's own sign-in page (no OIDC interaction), in `browser`. */
async function passwordForm(browser: HttpBrowser, identifier: string): Promise<Page> {
  const start = await browser.navigate('/en/auth?return_to=/en/auth');
  const page = await browser.submit(start, { identifier });
  expect(page.html).toContain('name="password"');
  return page;
}

/** `form`'s hidden fields plus `fields`, posted by `browser` as a page of another site would make it. */
async function crossSitePost(browser: HttpBrowser, form: Page, fields: Record<string, string>) {
  const hidden = Object.fromEntries(
    [...form.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [
      m[1]!,
      m[2]!,
    ]),
  );
  return browser.request('/en/auth/step', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: 'https://attacker.example',
      'sec-fetch-site': 'cross-site',
    },
    body: new URLSearchParams({ ...hidden, ...fields }).toString(),
  });
}

const signedIn = (browser: HttpBrowser) => browser.cookieNames().includes('service_id_refresh_token');

describe('a sign-in begun in one browser', () => {
  it('can not be finished in another: a page of another site can not sign a visitor in to its account', async () => {
    // Login CSRF: the attacker takes their own sign-in to its last step, then has the victim's
    // browser post that step (their password) from a page of theirs.
    const attacker = await createTestUser(service.service.db);
    const form = await passwordForm(new HttpBrowser(service.issuer), attacker.email!);
    const victim = new HttpBrowser(service.issuer);
    await victim.navigate('/en/auth');

    const answer = await crossSitePost(victim, form, { password: attacker.password });
    expect(signedIn(victim)).toBe(false);
    expect(answer.status).toBe(410);
    expect(pageText(answer, 'form-error')).toMatch(/expired or was already used/);
  });

  it('through the identity API can not be finished on the pages either', async () => {
    const attacker = await createTestUser(service.service.db);
    const started = await callIdentityApi(service, '/auth/flow/start', { flow: 'login' });
    const next = await callIdentityApi(service, '/auth/flow/step', {
      sessionId: started.body.sessionId,
      step: 'phone-email',
      input: { identifier: attacker.email },
    });
    expect(next.body.nextStep).toBe('password');
    const victim = new HttpBrowser(service.issuer);
    const form = await passwordForm(victim, `${attacker.email}.invalid`);

    const answer = await crossSitePost(victim, form, {
      flow: String(next.body.sessionId),
      password: attacker.password,
    });
    expect(signedIn(victim)).toBe(false);
    expect(answer.status).toBe(410);
  });

  it('goes on in the browser that began it', async () => {
    const user = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const answer = await browser.submit(await passwordForm(browser, user.email!), {
      password: user.password,
    });
    expect(answer.status).toBe(200);
    expect(signedIn(browser)).toBe(true);
  });
});
