import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

let service: TestService;
let other: TestService;
let api: IdentityClient;

beforeAll(async () => {
  // TRUST_PROXY: each login comes from the address it names in X-Forwarded-For.
  service = await startTestService({
    env: { TRUST_PROXY: 'true' },
    settings: {
      lockout: { ladder: [{ failures: 2, lockSeconds: 120 }] },
      codes: { length: 8, maxAttempts: 2, lifetimeSeconds: { reset_password: 300 } },
      cookies: { refreshToken: 'idp_refresh', device: 'idp_device' },
    },
  });
  // A second service in the same process keeps the defaults: settings are per service.
  other = await startTestService({ database: service.database });
  api = new IdentityClient(service);
});
afterAll(async () => {
  await other?.close();
  await service?.close();
});

describe('per-service settings (createIdentityService({ settings }))', () => {
  it('names its cookies as configured', async () => {
    const user = await createTestUser(service.service.db);
    const started = await api.start('login', { ip: randomIp() });
    const ip = randomIp();
    const identified = await api.pass(started.sessionId, 'phone-email', { identifier: user.email }, { ip });
    const done = await api.step(identified.sessionId, 'password', { password: user.password }, { ip });
    expect(done.status).toBe(200);
    const names = done.setCookies.map((cookie) => cookie.name);
    expect(names).toContain('idp_refresh');
    expect(names).toContain('idp_device');
    expect(names.filter((name) => name.startsWith('service_id_'))).toEqual([]);

    const elsewhere = await new IdentityClient(other).login(user.email!, user.password);
    expect(elsewhere.refreshCookie).toMatch(/^service_id_refresh_token=/);
  });

  it('locks a source after the configured number of failures', async () => {
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const attempt = async (password: string) => {
      const started = await api.start('login', { ip });
      const identified = await api.pass(started.sessionId, 'phone-email', { identifier: user.email }, { ip });
      return api.step(identified.sessionId, 'password', { password }, { ip });
    };
    expect((await attempt('wrong password 1')).status).toBe(401);
    expect((await attempt('wrong password 2')).status).toBe(401);
    // Locked after 2 (the default ladder starts at 5): even the right password waits the 2 minutes.
    const locked = await attempt(user.password);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(60);
  });

  it('sends codes of the configured length, lifetime and attempts', async () => {
    const user = await createTestUser(service.service.db);
    const answer = await api.post('/auth/password/forgot', { identifier: user.email }, { ip: randomIp() });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ expiresInSeconds: 300 });
    expect(service.service.developmentMessages.latestTo(user.email!)!.code).toMatch(/^\d{8}$/);
    const row = await service.service
      .db('verification_codes')
      .where({ identifier: user.email })
      .orderBy('created_at', 'desc')
      .first();
    expect(row.max_attempts).toBe(2);
  });
});
