import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaults } from '../../src/defaults.js';
import { callbackUri, createTestClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    env: { TRUST_PROXY: 'true', SESSION_IDLE_MINUTES: '60' },
    settings: {
      rateLimits: { 'identity-flow-start': { points: 2, durationSeconds: 60 } },
      lifetimes: { interaction: 120 },
      sessions: { reauthenticationMaxAgeSeconds: 90 },
    },
  });
});
afterAll(() => service?.close());

describe('createIdentityService({ settings }): the defaults of src/defaults.ts, overridden per service', () => {
  it('applies an overridden rate-limit rule where it is counted', async () => {
    const client = new IdentityClient(service);
    const ip = randomIp();
    const statuses = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      statuses.push((await client.post('/auth/flow/start', { flow: 'login' }, { ip })).status);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  it("gives the engine the overridden interaction lifetime (the interaction cookie's expiry)", async () => {
    const { client } = await createTestClient(service.service.db);
    const authorize = new URL(service.url('/oauth/authorize'));
    authorize.search = new URLSearchParams({
      client_id: client.clientId,
      response_type: 'code',
      scope: 'openid',
      redirect_uri: callbackUri,
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'S256',
    }).toString();
    const response = await fetch(authorize, { redirect: 'manual' });
    expect(response.status).toBe(303);
    const interactionCookie = response.headers
      .getSetCookie()
      .find((cookie) => cookie.startsWith('_interaction='));
    const expires = Date.parse(/expires=([^;]+)/i.exec(interactionCookie ?? '')![1]!);
    expect((expires - Date.now()) / 1000).toBeGreaterThan(100);
    expect((expires - Date.now()) / 1000).toBeLessThanOrEqual(120);
  });

  it('keeps every value not overridden at its default, the environment before the defaults', () => {
    const { settings } = service.service;
    expect(settings.rateLimits['identity-flow-step']).toEqual(defaults.rateLimits['identity-flow-step']);
    expect(settings.lifetimes.refreshToken).toBe(defaults.lifetimes.refreshToken);
    expect(settings.sessions).toEqual({ idleTimeoutSeconds: 3600, reauthenticationMaxAgeSeconds: 90 });
  });
});
