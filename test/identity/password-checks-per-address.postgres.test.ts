import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaults } from '../../src/defaults.js';
import { hashPassword } from '../../src/identity/passwords/password-hash.js';
import { savePasswordHash } from '../../src/identity/passwords/password-credential.js';
import { createTestUser } from '../support/fixtures.js';
import { mainAuthTokenFor } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

// On PostgreSQL only: its work is done in another process, as in production, so the requests wait for
// the argon2 slots; on the embedded database they would mostly wait for it, on the test's own thread.
describe('argon2 computations are shared between client addresses', () => {
  it("one address's burst of password checks does not hold up another address's sign-in", async () => {
    // The attacker: one account with a costly password hash (thrice production's passes, so that the
    // checks, not the database, are what a request waits for), and sessions enough to check it 16
    // times at once (a right password never locks anything; each session takes 4).
    const attacker = await createTestUser(service.service.db);
    const expensive = await hashPassword(attacker.password, { ...defaults.passwordHashing, timeCost: 6 });
    await savePasswordHash(service.service.db, attacker.id, expensive, new Date());
    const tokens = await Promise.all(Array.from({ length: 4 }, () => mainAuthTokenFor(service, attacker.id)));
    const attackerIp = randomIp();

    // The victim, elsewhere, at the password step of an ordinary sign-in.
    const victim = await createTestUser(service.service.db);
    const victimIp = randomIp();
    const started = await client.start('login', { ip: victimIp });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: victim.email },
      { ip: victimIp },
    );
    expect(identified.nextStep).toBe('password');

    let attackerAnswered = 0;
    let firstAnswered!: () => void;
    const first = new Promise<void>((resolve) => (firstAnswered = resolve));
    const burst = Array.from({ length: 16 }, (_, index) =>
      client
        .post(
          '/auth/reauthenticate',
          { method: 'password', password: attacker.password },
          { token: tokens[index % tokens.length], ip: attackerIp },
        )
        .then((answer) => {
          attackerAnswered += 1;
          firstAnswered();
          return answer.status;
        }),
    );
    // The burst is being checked (the rest of it waits for argon2) when the victim submits.
    await first;
    const victimAnswer = await client.step(
      identified.sessionId,
      'password',
      { password: victim.password },
      { ip: victimIp },
    );
    const answeredBeforeVictim = attackerAnswered;
    expect(victimAnswer.status, JSON.stringify(victimAnswer.body)).toBe(200);
    expect(victimAnswer.body.status).toBe('completed');
    expect(await Promise.all(burst)).toEqual(Array.from({ length: 16 }, () => 200));

    // First come, first served, the victim waited for the whole burst (15 or 16 checks answered
    // before it). Taken in turns per address, it waits for about one check of the attacker's.
    expect(answeredBeforeVictim).toBeLessThanOrEqual(6);
  });
});
