import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The onboarding's photo form (multipart, src/http/multipart-form.ts) is open to anyone who registers.
 * A body that ended inside the file part (its Content-Length honoured, the closing boundary never
 * sent) made busboy destroy the file's stream with "Unexpected end of form", and nothing listened for
 * that stream's errors: an uncaught exception, which ends the process, and every user's requests with
 * it. The service runs in the test's process, so an uncaught exception is seen here.
 */

let service: TestService;
const uncaught: unknown[] = [];
const recordUncaught = (error: unknown) => uncaught.push(error);

beforeAll(async () => {
  service = await startTestService();
  // Registration by a code alone: the shortest way to the onboarding's photo page.
  const codeOnly = [
    { stepId: 'phone-email', mandatory: true, order: 10 },
    { stepId: 'otp-code', mandatory: true, order: 20 },
  ];
  await replaceFunnel(service.service.db, 'registration', codeOnly, new Date());
  await replaceFunnel(service.service.db, 'login', codeOnly, new Date());
  process.on('uncaughtException', recordUncaught);
});
afterAll(async () => {
  process.off('uncaughtException', recordUncaught);
  await service?.close();
});
afterEach(() => {
  uncaught.length = 0;
});

/** Registers through the pages; answers the cookies of the onboarding that follows. */
async function onboardingCookie(): Promise<string> {
  const browser = new HttpBrowser(service.issuer);
  const email = uniqueEmail('photo');
  const codePage = await browser.submit(await browser.navigate('/en/auth?register=1'), { identifier: email });
  const code = service.service.developmentMessages.latestTo(email)!.code!;
  await browser.submit(codePage, { code });
  return browser.cookieHeader(new URL(service.url('/en/auth/onboarding')));
}

/** Sends `body` as the photo form over a raw socket; answers the status line's code. */
function uploadRaw(cookie: string, body: string): Promise<number> {
  const { port } = new URL(service.issuer);
  const head =
    'POST /en/auth/onboarding/avatar HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    `Cookie: ${cookie}\r\nContent-Type: multipart/form-data; boundary=x\r\n` +
    `Content-Length: ${Buffer.byteLength(body, 'latin1')}\r\nConnection: close\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
    socket.setTimeout(10_000, () => socket.destroy());
    socket.write(Buffer.from(head + body, 'latin1'));
  });
}

const filePart =
  '--x\r\nContent-Disposition: form-data; name="avatar"; filename="me.png"\r\n' +
  'Content-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n';

/** Sends the head and `body` of a longer photo form, then closes the connection with a reset. */
async function uploadAndLeave(cookie: string, body: string): Promise<void> {
  const { port } = new URL(service.issuer);
  const head =
    'POST /en/auth/onboarding/avatar HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    `Cookie: ${cookie}\r\nContent-Type: multipart/form-data; boundary=x\r\n` +
    'Content-Length: 100000\r\n\r\n';
  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.write(Buffer.from(head + body, 'latin1'), () => resolve());
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  socket.resetAndDestroy();
}

describe('a photo upload whose body ends inside the file', () => {
  it('is refused with 400, and the process goes on answering', async () => {
    const cookie = await onboardingCookie();
    expect(await uploadRaw(cookie, filePart + 'partial image bytes')).toBe(400);
    // The stream's error is emitted on a later tick than the answer.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(uncaught).toEqual([]);
    expect((await fetch(service.url('/healthz'))).status).toBe(200);
  });

  it('leaves the onboarding usable: a whole photo form afterwards is read', async () => {
    const cookie = await onboardingCookie();
    expect(await uploadRaw(cookie, filePart + 'partial')).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const skip = '--x\r\nContent-Disposition: form-data; name="skip"\r\n\r\n1\r\n--x--\r\n';
    expect(await uploadRaw(cookie, skip)).toBe(303);
    expect(uncaught).toEqual([]);
  });

  it('or whose connection closes inside the file leaves the process answering', async () => {
    await uploadAndLeave(await onboardingCookie(), filePart + 'partial image bytes');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(uncaught).toEqual([]);
    expect((await fetch(service.url('/healthz'))).status).toBe(200);
  });
});
