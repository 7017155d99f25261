import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { buildAuthorizationRequest, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// In Debian's chromium: the Content-Security-Policy lets the engine's inline scripts run (by hash)
// and nothing breaks a flow.
let service: TestService;
let browser: Browser;
beforeAll(async () => {
  service = await startTestService();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

describe('pages under the Content-Security-Policy, in a real browser', () => {
  it('response_mode=form_post: the auto-submitting page posts the code to the client', async () => {
    const context = await browser.newContext();
    const posted: { method: string; body: string }[] = [];
    await context.route(`${callbackUri}**`, async (route) => {
      posted.push({ method: route.request().method(), body: route.request().postData() ?? '' });
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>relying party</h1>' });
    });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) violations.push(message.text());
    });

    const user = await createTestUser(service.service.db);
    const { client } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    const request = await buildAuthorizationRequest(config, { response_mode: 'form_post' });
    await page.goto(request.url.toString());
    await page.fill('#identifier', user.email!);
    await page.click('button[type=submit]');
    await page.fill('#password', user.password);
    await page.click('button[type=submit]');
    await page.click('button[value=allow]');
    await page.waitForURL(callbackUri, { timeout: 10_000 });

    expect(posted).toHaveLength(1);
    expect(posted[0]!.method).toBe('POST');
    const form = new URLSearchParams(posted[0]!.body);
    expect(form.get('code')).toBeTruthy();
    expect(form.get('state')).toBe(request.state);
    expect(violations).toEqual([]);
    await context.close();
  });

  it("the engine's logout form (no session in this browser) submits itself to the signed-out page", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) violations.push(message.text());
    });
    const { client } = await createTestClient(service.service.db);
    await page.goto(service.url(`/oauth/end_session?client_id=${client.clientId}`));
    await page.getByTestId('signed-out').waitFor({ state: 'visible', timeout: 10_000 });
    expect(violations).toEqual([]);
    await context.close();
  });
});
