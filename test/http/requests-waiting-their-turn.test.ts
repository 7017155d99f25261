import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaults } from '../../src/defaults.js';
import { hashPassword } from '../../src/identity/passwords/password-hash.js';
import { savePasswordHash } from '../../src/identity/passwords/password-credential.js';
import { createTestUser } from '../support/fixtures.js';
import { mainAuthTokenFor } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

/**
 * At the bound on requests held at once, requests waiting their turn (here: password checks in line
 * for an argon2 slot) of an address holding more places give one up to a newcomer from another
 * address (src/http/requests-in-flight.ts, src/http/waiting-requests.ts). A few addresses holding
 * every place with slow sign-in attempts kept everyone else at 503.
 */
let service: TestService;
let client: IdentityClient;
beforeAll(async () => {
  service = await startTestService({
    env: { TRUST_PROXY: '1' },
    settings: { requestsInFlight: { total: 6, perAddress: 6 } },
  });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

const flowConfig = (ip: string) =>
  fetch(service.url('/api/v2/identity/auth/flow/config'), { headers: { 'x-forwarded-for': ip } });

describe('requests held at once, all waiting their turn', () => {
  it('one of the address holding them all gives its place to a newcomer, and gives back its claims', async () => {
    const { db } = service.service;
    // A right password with a costly hash (thirty times production's passes, most of a second each):
    // checked two at a time, the rest of the burst waits in line. Two sessions: a session's ladder
    // takes 5 attempts at once.
    const attacker = await createTestUser(db);
    const costly = await hashPassword(attacker.password, { ...defaults.passwordHashing, timeCost: 60 });
    await savePasswordHash(db, attacker.id, costly, new Date());
    const tokens = await Promise.all([
      mainAuthTokenFor(service, attacker.id),
      mainAuthTokenFor(service, attacker.id),
    ]);
    const attackerIp = randomIp();
    const burst = Array.from({ length: 6 }, (_, index) =>
      client
        .post(
          '/auth/reauthenticate',
          { method: 'password', password: attacker.password },
          { token: tokens[index % 2], ip: attackerIp },
        )
        .then((answer) => ({ status: answer.status, error: answer.body.error })),
    );
    // Every place is taken, each request past its lockout claim, on its way to (or in) the line.
    const claimed = async () =>
      Number(
        (
          await db('login_source_lockouts')
            .where({ account: `user:${attacker.id}` })
            .sum('in_flight as n')
        )[0]?.n ?? 0,
      );
    await expect.poll(claimed, { timeout: 10_000, interval: 10 }).toBe(6);

    // Long before the first check is done, a newcomer from another address gets a place.
    const newcomer = randomIp();
    await expect
      .poll(async () => (await flowConfig(newcomer)).status, { timeout: 300, interval: 20 })
      .toBe(200);

    // One of the burst gave its place up (503, in the API's error shape); the rest were checked.
    const answers = await Promise.all(burst);
    expect(answers.filter((answer) => answer.status === 503)).toEqual([
      { status: 503, error: 'service_unavailable' },
    ]);
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(5);
    // The one that gave up had claimed a place on its session's lockout counter: given back.
    expect(await claimed()).toBe(0);
  });
});
