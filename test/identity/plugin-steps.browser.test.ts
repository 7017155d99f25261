import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../../src/http/api-error.js';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { createFrameStep } from '../../src/identity/plugin-steps/frame-step.js';
import { createHtmlStep } from '../../src/identity/plugin-steps/html-step.js';
import { launchChromium } from '../support/browser.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { buildAuthorizationRequest, discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

/** The sample frame plugin's page, on its own origin: answers the host's init once a colour is clicked. */
const framePage = `<!doctype html><meta charset="utf-8"><title>colour</title>
<button id="blue">Blue</button><button id="red">Red</button>
<script>
  var host;
  window.addEventListener('message', function (event) {
    if (event.data && event.data.type === 'idp-step:init') host = { origin: event.origin, stepId: event.data.stepId };
  });
  function answer(colour) {
    parent.postMessage({ type: 'idp-step:submit', stepId: host.stepId, input: { colour: colour } }, host.origin);
  }
  document.getElementById('blue').onclick = function () { answer('blue'); };
  document.getElementById('red').onclick = function () { answer('red'); };
</script>`;

let service: TestService;
let browser: Browser;
let pluginServer: http.Server;
let pluginOrigin: string;
beforeAll(async () => {
  pluginServer = http.createServer((_request, response) => {
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end(framePage);
  });
  await new Promise<void>((resolve) => pluginServer.listen(0, '127.0.0.1', resolve));
  pluginOrigin = `http://127.0.0.1:${(pluginServer.address() as AddressInfo).port}`;
  [service, browser] = await Promise.all([startTestService(), launchChromium()]);
  service.service.steps
    .register(
      createHtmlStep({
        id: 'sample-terms',
        title: 'Our terms',
        html: () =>
          '<p><b>Read these terms.</b></p><script>window.pwned = 1</script>' +
          '<img src="x" onerror="window.pwned = 2"><a href="javascript:window.pwned = 3">click</a>' +
          '<a href="https://example.com/terms">the terms</a>',
        fields: [{ name: 'accept', type: 'checkbox', label: 'I accept the terms', required: true }],
        input: z.object({ accept: z.literal('on', { message: 'Accept the terms to go on.' }) }),
        run: async () => ({}),
      }),
    )
    .register(
      createFrameStep(
        {
          id: 'sample-colour',
          title: 'Pick a colour',
          src: `${pluginOrigin}/colour.html`,
          input: z.strictObject({ colour: z.enum(['blue', 'red']) }),
          async run(_context, input) {
            if (input.colour !== 'blue') throw new ApiError(400, 'wrong_colour', 'Blue is the one.');
            return {};
          },
        },
        service.service.config,
      ),
    );
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
  await new Promise((resolve) => pluginServer?.close(resolve));
});

describe('plugin steps as sanitized HTML and as an isolated frame, in a real browser', () => {
  it('shows the HTML without anything active, and relays only the frame’s own answer', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    await replaceFunnel(
      db,
      'login',
      [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'password', mandatory: true, order: 20 },
        { stepId: 'sample-terms', mandatory: true, order: 30 },
        { stepId: 'sample-colour', mandatory: true, order: 40 },
      ],
      new Date(),
    );
    const { client, clientSecret } = await createTestClient(db, { type: 'confidential', firstParty: true });
    const config = await discover(service.issuer, client.clientId, clientSecret);
    const request = await buildAuthorizationRequest(config);
    const context = await browser.newContext();
    await context.route('http://localhost:8080/**', (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>relying party</h1>' }),
    );
    const page = await context.newPage();
    await page.goto(request.url.toString());
    await page.fill('#identifier', user.email!);
    await page.click('button[type=submit]');
    await page.fill('#password', user.password);
    await page.click('button[type=submit]');

    // Sanitized HTML: the text and the safe link stay; script, handler and javascript: URL are gone.
    const html = page.getByTestId('plugin-html');
    await html.waitFor();
    expect(await html.locator('b').textContent()).toBe('Read these terms.');
    const inner = await html.innerHTML();
    expect(inner).not.toMatch(/script|onerror|javascript:/i);
    expect(await html.locator('a[href="https://example.com/terms"]').getAttribute('rel')).toBe(
      'noopener noreferrer',
    );
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    await page.check('input[name=accept]');
    await page.click('button[type=submit]');

    // The frame: sandboxed, on its own origin, allowed by the page's CSP.
    const frameElement = page.getByTestId('plugin-frame');
    await frameElement.waitFor();
    expect(await frameElement.getAttribute('sandbox')).toBe('allow-scripts allow-same-origin allow-forms');
    const frame = page.frameLocator('iframe.plugin-frame');
    await frame.locator('#blue').waitFor();
    // A message from anywhere but the frame (here: the page itself) is ignored.
    const stepUrl = page.url();
    await page.evaluate(
      // Posted, then one task later (message events are delivered as tasks) the page is looked at.
      "new Promise((resolve) => { window.postMessage({ type: 'idp-step:submit', stepId: 'sample-colour', input: { colour: 'blue' } }, window.location.origin); setTimeout(resolve, 50); })",
    );
    expect(await page.inputValue('input[data-frame-payload]')).toBe('');
    expect(page.url()).toBe(stepUrl);
    // The server judges what the frame sends.
    await frame.locator('#red').click();
    await page.getByText('Blue is the one.').waitFor();
    await page.frameLocator('iframe.plugin-frame').locator('#blue').click();

    await Promise.race([page.waitForURL(`${callbackUri}?**`), page.waitForSelector('button[value=allow]')]);
    if (!page.url().startsWith(callbackUri)) {
      await page.click('button[value=allow]');
      await page.waitForURL(`${callbackUri}?**`);
    }
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    expect(tokens.claims()!.sub).toBe(user.id);
    await replaceFunnel(
      db,
      'login',
      [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'password', mandatory: true, order: 20 },
      ],
      new Date(),
    );
    await context.close();
  });

  it('refuses a frame on the service’s own origin or over plain http elsewhere', () => {
    const step = { id: 'x', title: 'x', input: z.object({}), run: async () => ({}) };
    expect(() => createFrameStep({ ...step, src: `${service.issuer}/page` }, service.service.config)).toThrow(
      /another origin/,
    );
    expect(() =>
      createFrameStep({ ...step, src: 'http://plugins.example/page' }, service.service.config),
    ).toThrow(/https/);
  });
});
