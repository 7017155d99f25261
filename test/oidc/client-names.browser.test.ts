import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { buildAuthorizationRequest, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// In Debian's chromium (this file runs where chromium is installed; CI installs it).
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

/**
 * A client whose name holds a right-to-left override it never closes: registration refuses such a
 * name now, but a row stored before that rule (or written by hand) still has it.
 */
async function clientNamedWithAnOverride() {
  const { db } = service.service;
  const { client } = await createTestClient(db, { name: 'Placeholder' });
  await db('oauth_clients').where({ client_id: client.clientId }).update({ name: 'Good\u202Eevil' });
  return client;
}

/**
 * How the page lays out its client name and the words after it in the same sentence: the name's
 * element must isolate its text (`unicode-bidi: isolate`), and each word after the name must come
 * after the name and after the word before it in reading order (the pages are left to right: further
 * right on the same line, or on a later line).
 */
async function layoutAroundName(
  page: Page,
  words: string[],
): Promise<{ isolated: boolean; inOrder: boolean }> {
  // Runs in the page (this project's TypeScript has no DOM types, so the page's code is a string).
  return page.evaluate(`(${measureInPage})(${JSON.stringify(words)})`);
}

const measureInPage = `function (after) {
  var name = document.querySelector('[data-testid="client-name"]');
  var text = name.nextSibling;
  function rectOf(word) {
    var index = text.data.indexOf(word);
    var range = document.createRange();
    range.setStart(text, index);
    range.setEnd(text, index + word.length);
    return range.getClientRects()[0];
  }
  function follows(later, earlier) {
    return later.top > earlier.bottom - 1 || (Math.abs(later.top - earlier.top) < 1 && later.left >= earlier.right - 0.5);
  }
  var rects = name.getClientRects();
  var previous = rects[rects.length - 1];
  var inOrder = true;
  after.forEach(function (word) {
    var rect = rectOf(word);
    inOrder = inOrder && follows(rect, previous);
    previous = rect;
  });
  return { isolated: getComputedStyle(name).unicodeBidi === 'isolate', inOrder: inOrder };
}`;

describe('a client name with a bidirectional override on the pages', () => {
  it('turns no words of the sign-in, consent and signed-out sentences around it', async () => {
    const client = await clientNamedWithAnOverride();
    const user = await createTestUser(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    const request = await buildAuthorizationRequest(config);
    const context = await browser.newContext();
    await context.route(`${callbackUri}**`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>relying party</h1>' }),
    );
    const page = await context.newPage();
    await page.goto(request.url.toString());
    expect((await layoutAroundName(page, [])).isolated).toBe(true);
    await page.fill('#identifier', user.email!);
    await page.click('button[type=submit]');
    await page.fill('#password', user.password);
    await page.click('button[type=submit]');
    await page.waitForSelector('button[value=allow]');
    expect(await layoutAroundName(page, ['wants', 'access', 'account'])).toEqual({
      isolated: true,
      inOrder: true,
    });
    await page.click('button[value=allow]');
    await page.waitForURL(`${callbackUri}?**`);
    // The signed-out page names the client it is given (anyone may open it with any client_id).
    await page.goto(service.url(`/oauth/end_session/success?client_id=${client.clientId}`));
    await page.getByTestId('signed-out').waitFor({ state: 'visible', timeout: 10_000 });
    expect(await layoutAroundName(page, ['.'])).toEqual({ isolated: true, inOrder: true });
    await context.close();
  });

  it('a name of 255 characters without a space stays inside a phone’s screen', async () => {
    const { db } = service.service;
    const { client } = await createTestClient(db, { name: 'W'.repeat(255) });
    const user = await createTestUser(db);
    const config = await discover(service.issuer, client.clientId);
    const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    const page = await context.newPage();
    const overflows = () =>
      page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth');
    await page.goto((await buildAuthorizationRequest(config)).url.toString());
    expect(await overflows()).toBe(false);
    await page.fill('#identifier', user.email!);
    await page.click('button[type=submit]');
    await page.fill('#password', user.password);
    await page.click('button[type=submit]');
    await page.waitForSelector('button[value=allow]');
    expect(await overflows()).toBe(false);
    await page.goto(service.url(`/oauth/end_session/success?client_id=${client.clientId}`));
    await page.getByTestId('signed-out').waitFor({ state: 'visible', timeout: 10_000 });
    expect(await overflows()).toBe(false);
    await context.close();
  });
});
