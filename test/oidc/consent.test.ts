import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser, pageText } from '../support/http-browser.js';
import {
  buildAuthorizationRequest,
  completeAuthorization,
  discover,
  signInThroughPages,
} from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

async function setup() {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client } = await createTestClient(db, { name: 'Consent Demo' });
  const config = await discover(service.issuer, client.clientId);
  return { user, client, config };
}

describe('the consent screen', () => {
  it('shows the client name and a human description of each requested scope', async () => {
    const { user, config } = await setup();
    const request = await buildAuthorizationRequest(config, {
      scope: 'openid profile email phone organizations roles',
    });
    const browser = new HttpBrowser(service.issuer);
    let page = await browser.navigate(request.url.toString());
    page = await browser.submit(page, { identifier: user.email! });
    page = await browser.submit(page, { password: user.password });
    expect(pageText(page, 'client-name')).toBe('Consent Demo');
    for (const description of [
      'Your name and photo',
      'Your email address',
      'Your phone number',
      'Your organization memberships',
      'Your roles and rights',
    ]) {
      expect(page.html).toContain(description);
    }
    expect(page.html).toContain('value="allow"');
    expect(page.html).toContain('value="deny"');
  });

  it('sends the user back with error=access_denied and the state when they deny', async () => {
    const { user, config } = await setup();
    const request = await buildAuthorizationRequest(config);
    const page = await signInThroughPages(new HttpBrowser(service.issuer), request.url, {
      identifier: user.email!,
      password: user.password,
      consent: 'deny',
    });
    const callback = new URL(page.url);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(request.state);
    expect(callback.searchParams.has('code')).toBe(false);
    const saved = await service.service.db('consents').where({ user_id: user.id });
    expect(saved).toHaveLength(0);
  });

  it('is saved once per user and client and skipped on the next authorize, in any browser', async () => {
    const { user, client, config } = await setup();
    const browser = new HttpBrowser(service.issuer);
    await completeAuthorization(config, browser, { identifier: user.email!, password: user.password });
    // Same browser: signed in and consented, straight back to the client.
    const again = await completeAuthorization(config, browser, {
      identifier: user.email!,
      password: user.password,
      consent: 'expect-none',
    });
    expect(again.tokens.access_token).toBeTruthy();
    // Another browser: the user signs in, the consent is remembered.
    await completeAuthorization(config, new HttpBrowser(service.issuer), {
      identifier: user.email!,
      password: user.password,
      consent: 'expect-none',
    });
    const rows = await service.service.db('consents').where({ user_id: user.id, client_id: client.clientId });
    expect(rows).toHaveLength(1);
    expect([...rows[0].scopes].sort()).toEqual(['email', 'openid', 'profile']);
  });

  it('shows the screen again, with only the new scopes, when the client asks for more', async () => {
    const { user, client, config } = await setup();
    const browser = new HttpBrowser(service.issuer);
    await completeAuthorization(config, browser, {
      identifier: user.email!,
      password: user.password,
      parameters: { scope: 'openid email' },
    });
    const request = await buildAuthorizationRequest(config, { scope: 'openid email phone' });
    const page = await browser.navigate(request.url.toString());
    expect(page.html).toContain('data-scope="phone"');
    expect(page.html).not.toContain('data-scope="email"');
    const done = await browser.submit(page, { decision: 'allow' });
    expect(new URL(done.url).searchParams.has('code')).toBe(true);
    const [row] = await service.service
      .db('consents')
      .where({ user_id: user.id, client_id: client.clientId });
    expect([...row.scopes].sort()).toEqual(['email', 'openid', 'phone']);
  });
});
