import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as oidc from 'openid-client';
import { callbackUri, createTestClient, createTestUser, uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser, type Page } from '../support/http-browser.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * TLS ends in front of the service (docs/security.md): with an https issuer a request may reach it over
 * plain http, with no X-Forwarded-Proto or without TRUST_PROXY (the default). The cookies of the pages
 * must be Secure all the same, or a browser sends them, the engine's 30-day session among them, over
 * any plain-http request to the host, and takes them from one.
 */
let service: TestService;
/** The issuer: the address browsers use, TLS ended in front; the service listens on plain http. */
const issuer = 'https://id.example.test';
beforeAll(async () => {
  service = await startTestService({ env: { ISSUER: issuer } });
});
afterAll(() => service?.close());

/** The Set-Cookie lines of every answer `journey` gets. */
async function cookiesSetDuring(journey: () => Promise<unknown>): Promise<string[]> {
  const fetches = vi.spyOn(globalThis, 'fetch');
  try {
    await journey();
    const answers = await Promise.all(fetches.mock.results.map((result) => result.value as Response));
    return answers.flatMap((answer) => answer.headers.getSetCookie());
  } finally {
    fetches.mockRestore();
  }
}

const nameOf = (line: string) => line.slice(0, line.indexOf('='));
const isSecure = (line: string) =>
  line
    .split(';')
    .slice(1)
    .some((attribute) => attribute.trim().toLowerCase() === 'secure');

/** An application's authorization, signed in and consented through the pages, then a logout. */
async function signInAndOut(browser: HttpBrowser) {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client } = await createTestClient(db);
  const verifier = oidc.randomPKCECodeVerifier();
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: callbackUri,
    response_type: 'code',
    scope: 'openid profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: oidc.randomState(),
  });
  let page: Page = await browser.navigate(`/oauth/authorize?${query}`);
  page = await browser.submit(page, { identifier: user.email! });
  page = await browser.submit(page, { password: user.password });
  page = await browser.submit(page, { decision: 'allow' });
  expect(page.url.startsWith(`${callbackUri}?code=`)).toBe(true);
  const logout = await browser.navigate('/oauth/end_session');
  expect(new URL(logout.url).pathname).toBe('/en/auth/single-logout');
}

/** A registration through the pages, on into onboarding. */
async function register(browser: HttpBrowser) {
  const email = uniqueEmail('secure-cookies');
  let page = await browser.navigate('/en/auth?register=1');
  page = await browser.submit(page, { identifier: email });
  page = await browser.submit(page, { code: service.service.developmentMessages.latestTo(email)!.code! });
  if (page.html.includes('name="password"')) {
    page = await browser.submit(page, {
      password: 'a long enough passphrase',
      passwordConfirmation: 'a long enough passphrase',
    });
  }
  expect(new URL(page.url).pathname).toBe('/en/auth/onboarding');
}

describe('cookies of an https issuer reached over plain http', () => {
  it('are all Secure: sign-in, consent, logout, registration and onboarding', async () => {
    const lines = await cookiesSetDuring(async () => {
      await signInAndOut(new HttpBrowser(service.issuer, issuer));
      await register(new HttpBrowser(service.issuer, issuer));
    });
    const names = new Set(lines.map(nameOf));
    // The journeys did set the cookies this is about.
    for (const name of [
      '_session',
      '_interaction',
      'auth_browser',
      'finished_sign_ins',
      'logout_xsrf',
      'onboarding',
    ]) {
      expect(names).toContain(name);
    }
    expect(lines.filter((line) => !isSecure(line)).map(nameOf)).toEqual([]);
  });
});
