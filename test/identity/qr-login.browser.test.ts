import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { launchChromium } from '../support/browser.js';
import { expectAccessible } from '../support/page-checks.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { buildAuthorizationRequest, discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

const artifacts = path.resolve('test-artifacts/qr-login');
let service: TestService;
let browser: Browser;
beforeAll(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  // Behind a trusted proxy, so each browser's X-Forwarded-For is the address the service sees.
  [service, browser] = await Promise.all([
    startTestService({ env: { TRUST_PROXY: 'true' } }),
    launchChromium(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

/** The waiting computer: its browser and address are what the phone must be shown. */
const computerDevice = {
  userAgent:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  ip: '203.0.113.50',
};
const phoneDevice = {
  userAgent:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  ip: '198.51.100.23',
};

const passwordLogin = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

describe('the qr step, with two browsers', () => {
  it('a signed-in phone scans the code and approves; the waiting browser completes its sign-in', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    await replaceFunnel(db, 'login', passwordLogin, new Date());

    // The phone: signed in to the service (its refresh cookie), through the identity API.
    const phone = await browser.newContext({
      userAgent: phoneDevice.userAgent,
      extraHTTPHeaders: { 'x-forwarded-for': phoneDevice.ip },
    });
    const phonePage = await phone.newPage();
    await phonePage.goto(service.url('/en/reset-password'));
    const signedIn = await phonePage.evaluate(
      async ({ email, password }) => {
        const post = (path: string, body: unknown) =>
          fetch(`/api/v2/identity${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          }).then((response) => response.json() as Promise<Record<string, string>>);
        const started = await post('/auth/flow/start', { flow: 'login' });
        const identified = await post('/auth/flow/step', {
          sessionId: started.sessionId,
          step: 'phone-email',
          input: { identifier: email },
        });
        const done = await post('/auth/flow/step', {
          sessionId: identified.sessionId,
          step: 'password',
          input: { password },
        });
        return done.status;
      },
      { email: user.email!, password: user.password },
    );
    expect(signedIn).toBe('completed');

    // The computer: an application's sign-in, where the login funnel is the QR code alone.
    await replaceFunnel(db, 'login', [{ stepId: 'qr', mandatory: true, order: 10 }], new Date());
    const { client, clientSecret } = await createTestClient(db, {
      type: 'confidential',
      firstParty: true,
      name: 'Course Planner',
    });
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const request = await buildAuthorizationRequest(config);
    const computer = await browser.newContext({
      userAgent: computerDevice.userAgent,
      extraHTTPHeaders: { 'x-forwarded-for': computerDevice.ip },
    });
    await computer.route('http://localhost:8080/**', (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>relying party</h1>' }),
    );
    const computerPage = await computer.newPage();
    await computerPage.goto(request.url.toString());
    const qr = computerPage.getByTestId('qr-code');
    await qr.waitFor();
    expect(await qr.locator('svg').count()).toBe(1);
    const approveUrl = (await qr.getAttribute('data-approve-url'))!;
    expect(approveUrl.startsWith(`${service.issuer}/qr-approve.html#token=`)).toBe(true);

    // The phone "scans" the code: opens its address, sees which device asks (the computer's browser and
    // address, not its own) with the warning, and approves.
    await phonePage.goto(approveUrl);
    await phonePage.getByTestId('approve-qr').waitFor();
    expect(await phonePage.getByTestId('qr-requester-browser').textContent()).toBe('Chrome on Windows');
    expect(await phonePage.getByTestId('qr-requester-ip').textContent()).toBe(computerDevice.ip);
    expect(await phonePage.getByTestId('qr-requester-time').textContent()).not.toBe('');
    // What approving signs the computer in to: the application whose sign-in showed the code.
    expect(await phonePage.getByTestId('qr-requester-application').textContent()).toBe('Course Planner');
    expect(await phonePage.getByTestId('qr-warning').isVisible()).toBe(true);
    await expectAccessible(phonePage, artifacts, 'qr-approve-ask');
    await phonePage.getByTestId('approve-qr').click();
    await phonePage.getByTestId('qr-approved').waitFor();

    // The waiting page notices by itself and finishes: consent if asked, then back to the application.
    await Promise.race([
      computerPage.waitForURL(`${callbackUri}?**`),
      computerPage.waitForSelector('button[value=allow]'),
    ]);
    if (!computerPage.url().startsWith(callbackUri)) {
      await computerPage.click('button[value=allow]');
      await computerPage.waitForURL(`${callbackUri}?**`);
    }
    const tokens = await oidc.authorizationCodeGrant(config, new URL(computerPage.url()), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.claims()!.sub).toBe(user.id);

    // Single use: the same code can't be approved again, nor does it describe its requester any more.
    const again = await phone.newPage();
    await again.goto(approveUrl);
    await again.getByTestId('qr-failed').waitFor();
    expect(await again.getByTestId('approve-qr').isVisible()).toBe(false);
    await replaceFunnel(db, 'login', passwordLogin, new Date());
    await phone.close();
    await computer.close();
  });
});
