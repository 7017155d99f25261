import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';

// On PGlite and, with DATABASE_URL, on PostgreSQL, where the rate limiter batches the counters of
// concurrent requests into one statement.
let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
});
afterAll(() => service?.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const form = { 'content-type': 'application/x-www-form-urlencoded' };
const json = { 'content-type': 'application/json' };

/** A valid email address of 255 characters (labels of at most 63). */
const longEmail = (() => {
  const domain = `${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(56)}.example.com`;
  return `${'a'.repeat(255 - domain.length - 1)}@${domain}`;
})();

/** Each kind of oversized input the probe sent, with the answers it may get instead of a 500. */
const badRequests: { name: string; send(): Promise<Response>; expected: number[] }[] = [
  {
    name: 'authorize with a 300-character client_id',
    send: () => fetch(service.url(`/oauth/authorize?client_id=${'x'.repeat(300)}&response_type=code`)),
    expected: [400],
  },
  {
    name: 'token with a 300-character Basic username',
    send: () =>
      fetch(service.url('/oauth/token'), {
        method: 'POST',
        headers: { ...form, authorization: basic('x'.repeat(300), 'secret') },
        body: 'grant_type=client_credentials',
      }),
    expected: [401],
  },
  {
    name: 'introspect with a 300-character Basic username',
    send: () =>
      fetch(service.url('/oauth/introspect'), {
        method: 'POST',
        headers: { ...form, authorization: basic('y'.repeat(300), 'secret') },
        body: 'token=abc',
      }),
    expected: [401],
  },
  {
    name: 'password/forgot with a valid 255-character email',
    send: () =>
      fetch(service.url('/api/v2/identity/auth/password/forgot'), {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ identifier: longEmail }),
      }),
    expected: [200, 429],
  },
  {
    name: 'flow/start with a 300-character X-Forwarded-For',
    send: () =>
      fetch(service.url('/api/v2/identity/auth/flow/start'), {
        method: 'POST',
        headers: { ...json, 'x-forwarded-for': 'z'.repeat(300) },
        body: JSON.stringify({ flow: 'login' }),
      }),
    expected: [200, 429],
  },
];

describe('oversized input while other requests run', () => {
  it('gets its 4xx, and no request (its own or anybody else’s) answers 500', async () => {
    expect(longEmail).toHaveLength(255);
    const answers = new Map<string, number[]>(badRequests.map((kind) => [kind.name, []]));
    const flood = Array.from({ length: 8 }, async () => {
      for (let round = 0; round < 6; round++) {
        for (const kind of badRequests) {
          const response = await kind.send();
          await response.arrayBuffer();
          answers.get(kind.name)!.push(response.status);
        }
      }
    });
    // Unrelated, legitimate requests: each from its own address, well within its limit.
    const legitimate = Array.from({ length: 30 }, async (_, index) => {
      await new Promise((resolve) => setTimeout(resolve, index * 10));
      const response = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
        method: 'POST',
        headers: { ...json, 'x-forwarded-for': uniqueIp() },
        body: JSON.stringify({ flow: 'login' }),
      });
      await response.arrayBuffer();
      return response.status;
    });
    const [legitimateStatuses] = await Promise.all([Promise.all(legitimate), Promise.all(flood)]);

    expect(legitimateStatuses).toEqual(Array.from({ length: 30 }, () => 200));
    for (const kind of badRequests) {
      const statuses = answers.get(kind.name)!;
      expect(statuses, kind.name).toHaveLength(48);
      expect(
        statuses.filter((status) => !kind.expected.includes(status)),
        kind.name,
      ).toEqual([]);
    }
  });
});
