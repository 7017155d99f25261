import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  registerThroughPages as registerThroughPagesAs,
  useCodeOnlyFunnels,
} from '../identity/support/onboarding-pages.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The onboarding after a registration through the pages changes the account's photo, and ends with the
 * session the registration started (a logout there, a revocation from another device), so that a copy
 * of its cookie (a shared computer, a thief) can't go on changing it. The photo's page looked at the
 * onboarding when the request's head arrived, and read the upload after: a copy of the cookie that
 * began an upload before the owner logged out, and sent the bytes (up to 2 MB, as slowly as it likes)
 * after, put its picture on the account, in the `picture` claim every application reads.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  await useCodeOnlyFunnels(service);
});
afterAll(() => service?.close());

/** A 1×1 PNG. */
const photo = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

/**
 * The photo's form posted with these cookies: its head and the first bytes at once, the rest when
 * `finish` is called. Answers the status.
 */
function slowUpload(cookie: string): { finish(): void; status: Promise<number> } {
  const boundary = 'thief-boundary';
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="avatar"; filename="me.png"\r\n` +
        'Content-Type: image/png\r\n\r\n',
    ),
    photo,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const url = new URL(service.url('/en/auth/onboarding/avatar'));
  const request = http.request(url, {
    method: 'POST',
    headers: {
      cookie,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(body.length),
    },
  });
  const status = new Promise<number>((resolve, reject) => {
    request.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
  });
  request.write(body.subarray(0, 20));
  return { finish: () => request.end(body.subarray(20)), status };
}

const pictureOf = async (userId: string) =>
  ((await service.service.db('users').where({ id: userId }).first('picture')) as { picture: string | null })
    .picture;

describe('an onboarding photo uploaded across the owner’s logout', () => {
  it('is not put on the account', async () => {
    const registered = await registerThroughPagesAs(service, 'onboarding-photo');
    const upload = slowUpload(registered.copied);
    await sleep(300);
    const loggedOut = await registered.browser.request(service.url('/api/v2/identity/auth/logout'), {
      method: 'POST',
    });
    expect(JSON.parse(loggedOut.html)).toEqual({ loggedOut: true });
    upload.finish();
    expect(await upload.status).toBe(400);
    expect(await pictureOf(registered.userId)).toBeNull();
  });

  it('is put on the account while the onboarding lives', async () => {
    const registered = await registerThroughPagesAs(service, 'onboarding-photo');
    const upload = slowUpload(registered.copied);
    await sleep(300);
    upload.finish();
    expect(await upload.status).toBe(303);
    expect(await pictureOf(registered.userId)).toMatch(/\/avatars\//);
  });
});
