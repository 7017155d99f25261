import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { grantRole } from '../../src/identity/access/user-access.js';
import { allowedMethodsSetting } from '../../src/identity/auth-flow/allowed-methods.js';
import { loadFunnel, replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { clearSetting, readSetting, writeSetting } from '../../src/platform/settings/platform-settings.js';
import { bearerCall } from '../support/bearer-call.js';
import { createTestUser } from '../support/fixtures.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, MovableClock, randomIp } from '../identity/support/identity-client.js';
import { setUpTotp, totpCode } from '../identity/support/totp-codes.js';

// A person given identity.auth_flow.manage (not super_admin) configures how people sign in. The funnel
// and the allowed methods are one setting for everyone, so that person could stop the service asking a
// super administrator for the authenticator code they set up: the administrator's account is then
// worth its password alone. Like enabling or unlocking a user (src/admin/user-authority.ts), a change
// that makes the sign-in of someone holding more than the caller ask less takes what that person holds.

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();
const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];
let flowManagerToken: string;
let superAdminToken: string;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
  const { db } = service.service;
  const flowManager = await createTestUser(db);
  flowManagerToken = await mainAuthToken(service, flowManager, {
    permissions: ['identity.auth_flow.manage'],
  });
  const other = await createTestUser(db, { roles: ['super_admin'] });
  superAdminToken = await mainAuthToken(service, other, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());
afterEach(async () => {
  const { db } = service.service;
  await replaceFunnel(db, 'login', baseLogin, new Date());
  await clearSetting(db, allowedMethodsSetting);
  await db('user_roles').delete();
});

const admin = (method: string, path: string, token: string, body?: unknown) =>
  bearerCall(service, method, `/api/v2/admin${path}`, token, body);

/** A super administrator who set up an authenticator app (an allowed additional method). */
async function superAdminWithTotp() {
  await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
  const user = await createTestUser(service.service.db, { roles: ['super_admin'] });
  const secret = await setUpTotp(client, await client.login(user.email!, user.password), clock);
  clock.advance(30_000);
  return { user, secret };
}

/** The password login of `user`: what comes after the password (completed, or the next step). */
async function afterPassword(user: { email: string | null; password: string }) {
  const ip = randomIp();
  const started = await client.start('login', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier: user.email }, { ip });
  return client.step(identified.sessionId, 'password', { password: user.password }, { ip });
}

describe('a delegated auth-flow manager can not weaken the sign-in of someone holding more', () => {
  it('taking TOTP off the allowed methods is 403 while a super administrator uses it', async () => {
    const { user, secret } = await superAdminWithTotp();
    const refused = await admin('PUT', '/auth-flow/allowed-methods', flowManagerToken, { methods: [] });
    expect(refused).toMatchObject({
      status: 403,
      body: { error: 'forbidden', details: { permissions: ['*'] } },
    });
    expect(await readSetting(service.service.db, allowedMethodsSetting)).toEqual(['totp']);

    const passed = await afterPassword(user);
    expect(passed.body).toMatchObject({ status: 'in_progress', nextStep: 'totp' });
    const code = await totpCode(secret, clock.now());
    const done = loginFrom(await client.step(passed.body.sessionId, 'totp', { code }, { ip: randomIp() }));
    expect(done.userId).toBe(user.id);
  });

  it('dropping a mandatory TOTP step from the login funnel is 403 for them', async () => {
    const { user } = await superAdminWithTotp();
    const withTotp = [...baseLogin, { stepId: 'totp', mandatory: true, order: 30 }];
    await replaceFunnel(service.service.db, 'login', withTotp, new Date());
    await clearSetting(service.service.db, allowedMethodsSetting);
    await writeSetting(service.service.db, allowedMethodsSetting, [], new Date());

    const refused = await admin('PUT', '/auth-flow/funnels/login', flowManagerToken, { steps: baseLogin });
    expect(refused).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    expect((await loadFunnel(service.service.db, 'login')).map((step) => step.stepId)).toEqual([
      'phone-email',
      'password',
      'totp',
    ]);
    expect((await afterPassword(user)).body).toMatchObject({ nextStep: 'totp' });
  });

  it('replacing the password by a code sent to the mailbox is 403 for them', async () => {
    await createTestUser(service.service.db, { roles: ['super_admin'] });
    const steps = [
      { stepId: 'phone-email', mandatory: true, order: 1 },
      { stepId: 'otp-code', mandatory: true, order: 2 },
    ];
    const refused = await admin('PUT', '/auth-flow/funnels/login', flowManagerToken, { steps });
    expect(refused).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    expect((await loadFunnel(service.service.db, 'login')).map((step) => step.stepId)).toEqual([
      'phone-email',
      'password',
    ]);
  });

  it('a change that asks nobody above them less stays theirs; * may make any', async () => {
    const { user } = await superAdminWithTotp();
    // Asking more of everyone (the terms after the password) weakens nobody.
    const more = [...baseLogin, { stepId: 'consent', mandatory: true, order: 30 }];
    expect(await admin('PUT', '/auth-flow/funnels/login', flowManagerToken, { steps: more })).toMatchObject({
      status: 200,
    });
    expect(
      await admin('PUT', '/auth-flow/allowed-methods', flowManagerToken, { methods: ['totp'] }),
    ).toMatchObject({ status: 200 });
    // A user holding nothing the manager lacks may be asked less.
    await db()('user_roles').where({ user_id: user.id }).delete();
    expect(await admin('PUT', '/auth-flow/allowed-methods', flowManagerToken, { methods: [] })).toMatchObject(
      { status: 200 },
    );

    await grantRole(db(), user.id, 'super_admin');
    await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
    expect(await admin('PUT', '/auth-flow/allowed-methods', superAdminToken, { methods: [] })).toMatchObject({
      status: 200,
    });
    // Asked for no code now: the terms come right after the password.
    expect((await afterPassword(user)).body).toMatchObject({ status: 'in_progress', nextStep: 'consent' });
  });
});

const db = () => service.service.db;
