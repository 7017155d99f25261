import type { Page } from 'playwright-core';
import type { NewClient } from '../../src/oidc/models/oauth-client.js';
import { callbackUri, createTestClient, createTestUser } from './fixtures.js';
import { buildAuthorizationRequest, discover, oidc } from './relying-party.js';
import type { TestService } from './test-service.js';

/**
 * A new user signs in to a new client through the pages in chromium (identifier, password, consent),
 * and the client redeems the code: the browser then holds the provider's session.
 */
export async function signInInChromium(service: TestService, page: Page, client: Partial<NewClient> = {}) {
  const { db } = service.service;
  const user = await createTestUser(db);
  const created = await createTestClient(db, client);
  const config = await discover(service.issuer, created.client.clientId);
  const request = await buildAuthorizationRequest(config);
  await page.goto(request.url.toString());
  await page.fill('#identifier', user.email!);
  await page.click('button[type=submit]');
  await page.fill('#password', user.password);
  await page.click('button[type=submit]');
  await page.click('button[value=allow]');
  await page.waitForURL(`${callbackUri}?**`);
  const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: request.codeVerifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
  return { user, client: created.client, config, tokens };
}
