import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { revokeUserSessions } from '../../src/identity/sessions/sessions.js';
import { createTestUser } from '../support/fixtures.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp, type ApiResponse } from '../identity/support/identity-client.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A login through the API whose last screen checks the
 * password, finishing while the account is signed out everywhere (a password change or reset, revoke-all,
 * an administrator's revocation). The login has checked the old password and inserted its session, not
 * yet committed, when the sign-out starts; the session must not outlive the sign-out.
 */
let service: TestService;
let client: IdentityClient;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());
afterEach(() => replaceFunnel(service.service.db, 'login', baseLogin, new Date()));

const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

async function raceSignOut(submit: (deviceCookie: string) => Promise<ApiResponse<unknown>>, userId: string) {
  const { db } = service.service;
  let answered!: Promise<ApiResponse<unknown>>;
  let signedOut!: Promise<number>;
  const deviceCookie = deviceCookieNow!;
  const { id: bindingId } = (await db('saved_accounts')
    .join('device_bindings', 'device_bindings.id', 'saved_accounts.device_binding_id')
    .where({ 'saved_accounts.user_id': userId })
    .first('device_bindings.id')) as { id: string };
  // The login has checked the password and ended its flow; it waits (on the device binding the test
  // holds) before it commits its session when the sign-out everywhere starts.
  await db.transaction(async (trx) => {
    await trx('device_bindings').where({ id: bindingId }).forUpdate().first('id');
    answered = submit(deviceCookie);
    await untilWaitingForLocks(db, 1, answered);
    signedOut = db.transaction((other) =>
      revokeUserSessions(other, userId, { reason: 'revoked_by_admin' }, new Date()),
    );
    await untilWaitingForLocks(db, 2, signedOut);
  });
  const [answer] = await Promise.all([answered, signedOut]);
  expect([200, 401, 410]).toContain(answer.status);
  const live = await db('sessions').where({ user_id: userId, is_revoked: false });
  expect(live).toHaveLength(0);
}

let deviceCookieNow: string | undefined;

describe('a password login racing "sign out everywhere" on PostgreSQL', () => {
  it('leaves the user no live session (identifier and password on two screens)', async () => {
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const first = await client.login(user.email!, user.password, { ip });
    deviceCookieNow = first.deviceCookie;
    const started = await client.start('login', { ip, cookie: deviceCookieNow });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    await raceSignOut(
      (cookie) => client.step(identified.sessionId, 'password', { password: user.password }, { ip, cookie }),
      user.id,
    );
  });

  it('leaves the user no live session (identifier and password on one screen)', async () => {
    await replaceFunnel(
      service.service.db,
      'login',
      [
        { stepId: 'phone-email', mandatory: true, order: 10, group: 'first' },
        { stepId: 'password', mandatory: true, order: 20, group: 'first' },
      ],
      new Date(),
    );
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const firstStart = await client.start('login', { ip });
    const first = await client.post(
      '/auth/flow/step',
      {
        sessionId: firstStart.sessionId,
        steps: { 'phone-email': { identifier: user.email }, password: { password: user.password } },
      },
      { ip },
    );
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    deviceCookieNow = first.setCookies
      .filter((cookie) => cookie.name === 'service_id_device')
      .map((cookie) => `service_id_device=${cookie.value}`)[0];
    const started = await client.start('login', { ip, cookie: deviceCookieNow });
    await raceSignOut(
      (cookie) =>
        client.post(
          '/auth/flow/step',
          {
            sessionId: started.sessionId,
            steps: { 'phone-email': { identifier: user.email }, password: { password: user.password } },
          },
          { ip, cookie },
        ),
      user.id,
    );
  });

  it('ends a one-screen login whose password was checked before the sign-out committed', async () => {
    await replaceFunnel(
      service.service.db,
      'login',
      [
        { stepId: 'phone-email', mandatory: true, order: 10, group: 'first' },
        { stepId: 'password', mandatory: true, order: 20, group: 'first' },
      ],
      new Date(),
    );
    const { db } = service.service;
    const user = await createTestUser(db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    let answered!: Promise<ApiResponse<unknown>>;
    // The sign-out (a password change, say) holds the user's row; the login checks the old password
    // and waits for it before it starts its session.
    await db.transaction(async (trx) => {
      await trx('users').where({ id: user.id }).forUpdate().first('id');
      answered = client.post(
        '/auth/flow/step',
        {
          sessionId: started.sessionId,
          steps: { 'phone-email': { identifier: user.email }, password: { password: user.password } },
        },
        { ip },
      );
      await untilWaitingForLocks(db, 1, answered);
      await revokeUserSessions(trx, user.id, { reason: 'password_changed' }, new Date());
    });
    expect((await answered).status).toBe(410);
    expect(await db('sessions').where({ user_id: user.id, is_revoked: false })).toHaveLength(0);
  });
});
