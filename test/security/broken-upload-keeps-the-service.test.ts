import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * Anyone may register, and a new account's onboarding takes a photo as a multipart form. A form whose
 * body ended inside the file (no closing boundary: a cut upload, or one sent so on purpose) made the
 * parser fail the file's stream too, and nobody listened to that stream's errors: an uncaught
 * exception, which ends a Node process (`npm start`'s has no handler for it, nor should it), every
 * other person's requests with it, at one request of a stranger's. The service runs in the test's
 * process here, so the test listens for that exception itself.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
  const codeOnly = [
    { stepId: 'phone-email', mandatory: true, order: 10 },
    { stepId: 'otp-code', mandatory: true, order: 20 },
  ];
  // Registration by a code alone: the shortest way to the onboarding's photo page.
  await replaceFunnel(service.service.db, 'registration', codeOnly, new Date());
  await replaceFunnel(service.service.db, 'login', codeOnly, new Date());
});
afterAll(() => service?.close());

/** Registers through the pages; answers the cookies of the onboarding that follows. */
async function newOnboarding(): Promise<string> {
  const browser = new HttpBrowser(service.issuer);
  const email = uniqueEmail('cut-upload');
  const codePage = await browser.submit(await browser.navigate('/en/auth?register=1'), { identifier: email });
  const onboarding = await browser.submit(codePage, {
    code: service.service.developmentMessages.latestTo(email)!.code!,
  });
  expect(onboarding.url).toContain('/auth/onboarding');
  return browser.cookieHeader(new URL(service.url('/en/auth/onboarding')));
}

/** A raw HTTP/1.1 request (fetch can't send a body that ends inside a part); answers the status line. */
function rawPost(path: string, headers: Record<string, string>, body: string): Promise<string> {
  const url = new URL(service.url(path));
  return new Promise((resolve) => {
    let answer = '';
    const socket = net.connect(Number(url.port), url.hostname, () => {
      const head = Object.entries({ ...headers, host: url.host, 'content-length': String(body.length) })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      socket.write(`POST ${url.pathname} HTTP/1.1\r\n${head}connection: close\r\n\r\n${body}`);
    });
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''));
    socket.on('error', () => resolve(answer.split('\r\n')[0] ?? ''));
  });
}

it('answers a photo upload cut inside the file with 400, and throws nothing that ends the process', async () => {
  const cookie = await newOnboarding();
  const uncaught: unknown[] = [];
  const listener = (error: unknown) => uncaught.push(error);
  process.on('uncaughtException', listener);
  try {
    const boundary = 'cut-here';
    const status = await rawPost(
      '/en/auth/onboarding/avatar',
      { cookie, 'content-type': `multipart/form-data; boundary=${boundary}` },
      `--${boundary}\r\n` +
        'content-disposition: form-data; name="avatar"; filename="me.png"\r\n' +
        'content-type: image/png\r\n\r\n' +
        'the first bytes of a photo, and then nothing',
    );
    expect(status).toBe('HTTP/1.1 400 Bad Request');
    // Someone else's request, a moment later.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await fetch(service.url('/.well-known/openid-configuration'))).status).toBe(200);
  } finally {
    process.off('uncaughtException', listener);
  }
  expect(uncaught.map(String)).toEqual([]);
});
