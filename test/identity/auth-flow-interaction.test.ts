import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser, pageText } from '../support/http-browser.js';
import {
  buildAuthorizationRequest,
  completeAuthorization,
  discover,
  oidc,
} from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient } from './support/identity-client.js';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
});
afterAll(() => service?.close());
afterEach(async () => {
  await replaceFunnel(
    service.service.db,
    'login',
    [
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'password', mandatory: true, order: 20 },
    ],
    new Date(),
  );
});

describe('the OIDC login pages run the same funnels', () => {
  it('renders a step added to the funnel (consent to terms) and a group screen, then completes the authorization', async () => {
    await replaceFunnel(
      service.service.db,
      'login',
      [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'password', mandatory: true, order: 20, group: 'credentials' },
        { stepId: 'consent', mandatory: true, order: 30, group: 'credentials' },
      ],
      new Date(),
    );
    const user = await createTestUser(service.service.db);
    const { client } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    const request = await buildAuthorizationRequest(config);
    const browser = new HttpBrowser(service.issuer);

    let page = await browser.navigate(request.url.toString());
    page = await browser.submit(page, { identifier: user.email! });
    // Password and terms on one screen, one Continue button.
    expect(page.html).toContain('name="password[password]"');
    expect(page.html).toContain('name="consent[accept]"');
    expect(pageText(page, 'identifier')).toBe(user.email);

    const refused = await browser.submit(page, { 'password[password]': user.password });
    expect(refused.status).toBe(400);
    expect(pageText(refused, 'form-error')).toBe('The request is not valid.');

    page = await browser.submit(refused, { 'password[password]': user.password, 'consent[accept]': 'on' });
    expect(page.html).toContain('name="decision"');
    page = await browser.submit(page, { decision: 'allow' });
    expect(page.url.startsWith(callbackUri)).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.claims()!.sub).toBe(user.id);
  });

  it('keeps OAuth and main-auth tokens apart', async () => {
    const user = await createTestUser(service.service.db);
    const { client } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
      identifier: user.email!,
      password: user.password,
    });
    const identity = new IdentityClient(service);
    // An OAuth access token is not a main-auth token.
    const me = await identity.get('/auth/me', { token: tokens.access_token });
    expect(me.status).toBe(401);
    expect((await identity.get('/security/sessions', { token: tokens.access_token })).status).toBe(401);
    // And a main-auth token is not an OAuth token.
    const login = await identity.login(user.email!, user.password);
    const userinfo = await fetch(service.url('/oauth/userinfo'), {
      headers: { authorization: `Bearer ${login.accessToken}` },
    });
    expect(userinfo.status).toBe(401);
  });
});
