import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());
afterEach(() => {
  vi.useRealTimers();
});

describe('rate limits of /auth/flow (the rate limiter reads Date: fake timers move it)', () => {
  it('allows 10 flow starts per minute per IP, answers 429 with Retry-After, then allows again', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date() });
    const ip = randomIp();
    const results = await Promise.all(
      Array.from({ length: 15 }, () => client.post('/auth/flow/start', { flow: 'login' }, { ip })),
    );
    expect(results.filter((result) => result.status === 200)).toHaveLength(10);
    const limited = results.filter((result) => result.status === 429);
    expect(limited).toHaveLength(5);
    const retryAfter = Number(limited[0]!.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited[0]!.body).toMatchObject({
      error: 'too_many_requests',
      details: { retryAfterSeconds: retryAfter },
    });
    // Another IP has its own budget.
    expect((await client.post('/auth/flow/start', { flow: 'login' }, { ip: randomIp() })).status).toBe(200);
    vi.setSystemTime(Date.now() + 61_000);
    expect((await client.post('/auth/flow/start', { flow: 'login' }, { ip })).status).toBe(200);
  });

  it('allows 10 step submissions per minute per IP and flow session', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date() });
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        client.step(started.sessionId, 'phone-email', { identifier: 'not an identifier' }, { ip }),
      ),
    );
    expect(results.filter((result) => result.status === 400)).toHaveLength(10);
    expect(results.filter((result) => result.status === 429)).toHaveLength(2);
    // Another flow session from the same IP is not affected.
    const other = await client.start('login', { ip });
    expect(
      (await client.step(other.sessionId, 'phone-email', { identifier: 'a@example.com' }, { ip })).status,
    ).toBe(200);
  });
});
