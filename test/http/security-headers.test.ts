import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser, type Page } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, signInThroughPages } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

/** The directives of a Content-Security-Policy header, by name. */
function directives(headers: Headers): Map<string, string[]> {
  const policy = headers.get('content-security-policy') ?? '';
  return new Map(
    policy
      .split(';')
      .map((directive) => directive.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...values]) => [name!, values]),
  );
}

function expectUnframeableAndUnsniffable(headers: Headers): void {
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(directives(headers).get('frame-ancestors')).toEqual(["'none'"]);
}

function expectPageHeaders(headers: Headers): void {
  expect(headers.get('content-type')).toContain('text/html');
  expectUnframeableAndUnsniffable(headers);
  expect(directives(headers).get('script-src')?.[0]).toBe("'self'");
  expect(headers.get('x-frame-options')).toBe('DENY');
}

/** The page's one inline script runs because the CSP names its hash, and nothing else inline would. */
function expectInlineScriptAllowedByHash(page: Page): void {
  const script = /<script>([\s\S]*?)<\/script>/.exec(page.html)![1]!;
  const hash = `'sha256-${crypto.createHash('sha256').update(script).digest('base64')}'`;
  expect(directives(page.headers).get('script-src')).toEqual(["'self'", hash]);
}

describe('security headers on every answer', () => {
  it('JSON answers: nosniff, never framed, and no HSTS on an http issuer', async () => {
    const answers = await Promise.all([
      fetch(service.url('/.well-known/openid-configuration')),
      fetch(service.url('/api/v2/identity/nope')),
      fetch(service.url('/oauth/token'), { method: 'POST' }),
      fetch(service.url('/oauth/userinfo')),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 404, 401, 401]);
    for (const answer of answers) {
      expect(answer.headers.get('content-type')).toContain('application/json');
      expectUnframeableAndUnsniffable(answer.headers);
      expect(directives(answer.headers).get('default-src')).toEqual(["'none'"]);
      expect(answer.headers.get('strict-transport-security')).toBeNull();
    }
  });

  it('our pages: the sign-in page, /:lang/reset-password, /:lang/auth/single-logout', async () => {
    const { client } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    const signIn = await new HttpBrowser(service.issuer).navigate(
      (await buildAuthorizationRequest(config)).url.href,
    );
    expect(signIn.html).toContain('name="identifier"');
    expectPageHeaders(signIn.headers);
    for (const path of ['/en/reset-password', '/en/auth/single-logout']) {
      const page = await fetch(service.url(path));
      expect(page.status).toBe(200);
      expectPageHeaders(page.headers);
    }
  });

  it("the engine's error page", async () => {
    const page = await fetch(service.url('/oauth/authorize?client_id=nobody'), {
      headers: { accept: 'text/html' },
    });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('data-testid="error-code"');
    expectPageHeaders(page.headers);
  });

  it("the engine's form_post page: its one inline script is allowed by hash, nothing else", async () => {
    const user = await createTestUser(service.service.db);
    const { client } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, client.clientId);
    const request = await buildAuthorizationRequest(config, { response_mode: 'form_post' });
    const page = await signInThroughPages(new HttpBrowser(service.issuer), request.url, {
      identifier: user.email!,
      password: user.password,
    });
    expect(page.status).toBe(200);
    expect(page.html).toContain(`action="${callbackUri}"`);
    expect(page.html).toMatch(/name="code" value="[^"]+"/);
    expectPageHeaders(page.headers);
    expectInlineScriptAllowedByHash(page);
  });

  it("the engine's logout pages: its auto-submitting form, its redirect to ours, its signed-out page", async () => {
    const { client } = await createTestClient(service.service.db);
    // No session in this browser: the engine answers its own form, posting to the confirm endpoint.
    const browser = new HttpBrowser(service.issuer);
    const form = await browser.navigate(`/oauth/end_session?client_id=${client.clientId}`);
    expect(form.status).toBe(200);
    expect(form.html).toContain('/oauth/end_session/confirm');
    expectPageHeaders(form.headers);
    expectInlineScriptAllowedByHash(form);
    const signedOut = await browser.submit(form, {});
    expect(signedOut.status).toBe(200);
    expect(signedOut.html).toContain('data-testid="signed-out"');
    expectPageHeaders(signedOut.headers);

    // A signed-in browser: the engine's redirect to /:lang/auth/single-logout.
    const signedIn = await userWithTokens(service);
    const url = service.url(`/oauth/end_session?client_id=${signedIn.client.clientId}`);
    const redirect = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: signedIn.browser.cookieHeader(new URL(url)) },
    });
    expect(redirect.status).toBe(303);
    expect(redirect.headers.get('location')).toMatch(/^\/en\/auth\/single-logout#/);
    expectUnframeableAndUnsniffable(redirect.headers);
  });
});

describe('HSTS', () => {
  it('is sent when the issuer is https (the service may sit behind a TLS-terminating proxy)', async () => {
    const behindTls = await startTestService({ env: { ISSUER: 'https://id.example.test' } });
    try {
      for (const path of ['/.well-known/openid-configuration', '/en/reset-password']) {
        const answer = await fetch(behindTls.url(path));
        expect(answer.status).toBe(200);
        expect(answer.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
        expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      }
    } finally {
      await behindTls.close();
    }
  });
});
