import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { createTestUser } from '../support/fixtures.js';
import { mainAuthTokenFor } from '../support/identity-api-client.js';
import { startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, MovableClock, randomIp } from '../identity/support/identity-client.js';

/**
 * A stolen main-auth token can guess the account's password at POST /auth/reauthenticate (a right
 * guess opens the changes that need a recent proof: a new email, then a reset). Those guesses are
 * counted on the lockout ladder of the token's session, so the thief gets 5 before a wait, 20 before
 * each further guess costs 30 minutes. But the token also approves a QR sign-in of the thief's own
 * machine, which starts a NEW session (and so does an inbound SSO login from it), and each new session
 * had a ladder of its own: 5 more guesses per session, as many sessions as the thief liked. A session
 * that another one started is now counted on its starter's ladder.
 */
const clock = new MovableClock();
let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
  await replaceFunnel(
    service.service.db,
    'login',
    [{ stepId: 'qr', mandatory: true, order: 10 }],
    clock.now(),
  );
});
afterAll(() => service?.close());

const wrongPassword = { method: 'password', password: 'not it at all' };

/** A session of the thief's machine, approved by QR with `token`; answers its access token. */
async function sessionApprovedWith(token: string, ip: string): Promise<string> {
  const started = await client.start('login', { ip });
  const qr = (started.screen[0]!.data!.qr as { token: string }).token;
  const approved = await client.post('/auth/qr/approve', { token: qr }, { token, ip });
  expect(approved.status, JSON.stringify(approved.body)).toBe(200);
  return loginFrom((await client.step(started.sessionId, 'qr', {}, { ip })) as never).accessToken;
}

describe('password guesses from a stolen session', () => {
  it('go on from a session it started by QR only once its own wait is over', async () => {
    const user = await createTestUser(service.service.db);
    const stolen = await mainAuthTokenFor(service, user.id, {
      sessionId: await startTestSession(service, user.id),
    });
    const ip = randomIp();
    for (let guess = 0; guess < 5; guess += 1) {
      const wrong = await client.post('/auth/reauthenticate', wrongPassword, { token: stolen, ip });
      expect(wrong.status, JSON.stringify(wrong.body)).toBe(400);
    }
    expect((await client.post('/auth/reauthenticate', wrongPassword, { token: stolen, ip })).status).toBe(
      429,
    );

    // A new session of the thief's, and one that session started in turn: the same wait.
    const minted = await sessionApprovedWith(stolen, ip);
    const fromMinted = await client.post('/auth/reauthenticate', wrongPassword, { token: minted, ip });
    expect(fromMinted.status, JSON.stringify(fromMinted.body)).toBe(429);
    const mintedAgain = await sessionApprovedWith(minted, ip);
    const fromSecond = await client.post(
      '/auth/reauthenticate',
      { ...wrongPassword },
      { token: mintedAgain, ip },
    );
    expect(fromSecond.status, JSON.stringify(fromSecond.body)).toBe(429);
    // Even the right password waits (decided before it is looked at), and nothing more was judged.
    const right = { method: 'password', password: user.password };
    expect((await client.post('/auth/reauthenticate', right, { token: mintedAgain, ip })).status).toBe(429);
    const failures = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.loginFailed,
    });
    expect(failures).toHaveLength(5);

    // Once the wait is over, the owner's proof counts as ever, from any of them.
    clock.advance(31_000);
    const confirmed = await client.post('/auth/reauthenticate', right, { token: mintedAgain, ip });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
  });

  it('leave the ladder of the owner’s other sessions alone', async () => {
    const user = await createTestUser(service.service.db);
    const stolen = await mainAuthTokenFor(service, user.id, {
      sessionId: await startTestSession(service, user.id),
    });
    const own = await mainAuthTokenFor(service, user.id, {
      sessionId: await startTestSession(service, user.id),
    });
    const ip = randomIp();
    for (let guess = 0; guess < 5; guess += 1) {
      await client.post('/auth/reauthenticate', wrongPassword, { token: stolen, ip });
    }
    const right = { method: 'password', password: user.password };
    expect((await client.post('/auth/reauthenticate', right, { token: own, ip })).status).toBe(200);
  });
});
