import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../../src/http/api-error.js';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { allowedMethodsSetting } from '../../src/identity/auth-flow/allowed-methods.js';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { clearSetting, writeSetting } from '../../src/platform/settings/platform-settings.js';
import { createTestUser } from '../support/fixtures.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, MovableClock, randomIp } from './support/identity-client.js';
import { setUpTotp, totpCode } from './support/totp-codes.js';

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();
const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
  // A plugin step delivered as a schema of fields (spec: plugin steps).
  service.service.steps.register({
    id: 'favourite-colour',
    input: z.object({ colour: z.string().min(1) }),
    async run(_context, { colour }) {
      if (colour !== 'blue') throw new ApiError(400, 'wrong_colour', 'Not your favourite colour.');
      return { tempData: { colour } };
    },
    screen: () => ({
      title: 'Security question',
      fields: [{ name: 'colour', type: 'text', label: 'Favourite colour', required: true }],
    }),
  });
});
afterAll(() => service?.close());
afterEach(async () => {
  await replaceFunnel(service.service.db, 'login', baseLogin, new Date());
  await clearSetting(service.service.db, allowedMethodsSetting);
});

const setLoginFunnel = (steps: FunnelStep[]) => replaceFunnel(service.service.db, 'login', steps, new Date());

/** A login funnel with the terms after the password, a user's login taken past the password. */
async function loginPastPasswordBeforeConsent() {
  await setLoginFunnel([...baseLogin, { stepId: 'consent', mandatory: true, order: 30 }]);
  const user = await createTestUser(service.service.db);
  const ip = randomIp();
  const started = await client.start('login', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier: user.email }, { ip });
  const passed = await client.pass(identified.sessionId, 'password', { password: user.password }, { ip });
  return { user, ip, passed };
}

describe('funnel variants', () => {
  it('extended funnel: consent to the terms after the password', async () => {
    const { user, ip, passed } = await loginPastPasswordBeforeConsent();
    expect(passed.nextStep).toBe('consent');
    expect(passed.screen[0]).toMatchObject({
      stepId: 'consent',
      fields: [expect.objectContaining({ name: 'accept', type: 'checkbox' })],
      data: { termsUrl: '/terms' },
    });
    const refused = await client.step(passed.sessionId, 'consent', { accept: false }, { ip });
    expect(refused.status).toBe(400);
    const done = await client.step(passed.sessionId, 'consent', { accept: true }, { ip });
    expect(done.body).toMatchObject({ status: 'completed', userId: user.id });
  });

  it('a login past its password when the password changes does not finish after it', async () => {
    // Someone who knows the old password got this far; the owner changes it.
    const { user, ip, passed } = await loginPastPasswordBeforeConsent();
    const newPassword = 'the owner changed it just now';
    const changed = await callIdentityApi(
      service,
      '/auth/password/change',
      { currentPassword: user.password, newPassword, newPasswordConfirmation: newPassword },
      { token: await mainAuthTokenFor(service, user.id), ip: randomIp() },
    );
    expect(changed.status).toBe(200);
    const late = await client.step(passed.sessionId, 'consent', { accept: true }, { ip });
    expect(late).toMatchObject({ status: 410, body: { error: 'flow_session_invalid' } });
  });

  it('group step: several steps on one screen with one submission', async () => {
    await setLoginFunnel([
      { stepId: 'phone-email', mandatory: true, order: 10, group: 'first' },
      { stepId: 'consent', mandatory: true, order: 15, group: 'first' },
      { stepId: 'password', mandatory: true, order: 20 },
    ]);
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    expect(started.screen.map((screen) => screen.stepId)).toEqual(['phone-email', 'consent']);
    // Submitting one of the group alone is out of order.
    const alone = await client.step(started.sessionId, 'phone-email', { identifier: user.email }, { ip });
    expect(alone.status).toBe(409);
    expect(alone.body.details).toMatchObject({ expectedSteps: ['phone-email', 'consent'] });
    // One step of the group refusing keeps the whole screen.
    const partly = await client.post(
      '/auth/flow/step',
      { sessionId: started.sessionId, steps: { 'phone-email': { identifier: user.email }, consent: {} } },
      { ip },
    );
    expect(partly.status).toBe(400);
    const grouped = await client.post<{ nextStep: string; sessionId: string; completedSteps: string[] }>(
      '/auth/flow/step',
      {
        sessionId: started.sessionId,
        steps: { 'phone-email': { identifier: user.email }, consent: { accept: true } },
      },
      { ip },
    );
    expect(grouped.status).toBe(200);
    expect(grouped.body).toMatchObject({ nextStep: 'password', completedSteps: ['phone-email', 'consent'] });
    const done = await client.step(grouped.body.sessionId, 'password', { password: user.password }, { ip });
    expect(done.body.status).toBe('completed');
  });

  it('a plugin step described by a schema of fields', async () => {
    await setLoginFunnel([...baseLogin, { stepId: 'favourite-colour', mandatory: true, order: 30 }]);
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    const passed = await client.pass(identified.sessionId, 'password', { password: user.password }, { ip });
    expect(passed.screen).toEqual([
      {
        stepId: 'favourite-colour',
        title: 'Security question',
        fields: [{ name: 'colour', type: 'text', label: 'Favourite colour', required: true }],
      },
    ]);
    expect(
      (await client.step(passed.sessionId, 'favourite-colour', { colour: 'red' }, { ip })).body,
    ).toMatchObject({ error: 'wrong_colour' });
    expect(
      (await client.step(passed.sessionId, 'favourite-colour', { colour: 'blue' }, { ip })).body.status,
    ).toBe('completed');
  });

  it('full replacement: login by email and authenticator app, without a password', async () => {
    await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
    const user = await createTestUser(service.service.db);
    const secret = await setUpTotp(client, await client.login(user.email!, user.password), clock);
    await setLoginFunnel([
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'totp', mandatory: true, order: 20 },
    ]);
    clock.advance(30_000);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    expect(identified.nextStep).toBe('totp');
    const done = await client.step(
      identified.sessionId,
      'totp',
      { code: await totpCode(secret, clock.now()) },
      { ip },
    );
    expect(done.body).toMatchObject({ status: 'completed', userId: user.id });
  });

  it('user-added step: a user who enabled TOTP is asked for a code after the password, once per code', async () => {
    await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
    const user = await createTestUser(service.service.db);
    const secret = await setUpTotp(client, await client.login(user.email!, user.password), clock);
    clock.advance(30_000);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    expect(identified.nextStep).toBe('password');
    const passed = await client.pass(identified.sessionId, 'password', { password: user.password }, { ip });
    // The password alone no longer completes this user's login.
    expect(passed.status).toBe('in_progress');
    expect(passed.nextStep).toBe('totp');
    const wrong = await client.step(passed.sessionId, 'totp', { code: '000000' }, { ip });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_code');
    const code = await totpCode(secret, clock.now());
    const done = loginFrom(await client.step(passed.sessionId, 'totp', { code }, { ip }));
    expect(done.userId).toBe(user.id);
    const meResponse = await client.get('/auth/me', { token: done.accessToken });
    expect(meResponse.body.mfaProtected).toBe(true);

    // Wrong codes count toward the account lockout like wrong passwords.
    const [failure] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: 'identity.login.failed',
    });
    expect(failure).toMatchObject({ details: expect.objectContaining({ method: 'totp' }) });

    // The same code can't be used twice.
    const again = await client.start('login', { ip });
    const id2 = await client.pass(again.sessionId, 'phone-email', { identifier: user.email }, { ip });
    const pw2 = await client.pass(id2.sessionId, 'password', { password: user.password }, { ip });
    expect((await client.step(pw2.sessionId, 'totp', { code }, { ip })).status).toBe(401);
  });

  it('forced setup: a mandatory TOTP step the user lacks is set up after the password, then asked at later logins', async () => {
    await setLoginFunnel([...baseLogin, { stepId: 'totp', mandatory: true, order: 30 }]);
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    const passed = await client.pass(identified.sessionId, 'password', { password: user.password }, { ip });
    expect(passed.nextStep).toBe('mfa-setup');
    const screen = passed.screen[0]!;
    expect(screen.data).toMatchObject({
      method: 'totp',
      otpauthUrl: expect.stringMatching(/^otpauth:\/\/totp\//),
    });
    const secret = screen.data!.secret as string;
    expect((await client.step(passed.sessionId, 'mfa-setup', { code: '123456' }, { ip })).status).toBe(400);
    const done = await client.step(
      passed.sessionId,
      'mfa-setup',
      { code: await totpCode(secret, clock.now()) },
      { ip },
    );
    expect(done.body).toMatchObject({ status: 'completed', userId: user.id });

    clock.advance(30_000);
    const later = await client.start('login', { ip });
    const id2 = await client.pass(later.sessionId, 'phone-email', { identifier: user.email }, { ip });
    const pw2 = await client.pass(id2.sessionId, 'password', { password: user.password }, { ip });
    expect(pw2.nextStep).toBe('totp');
    const second = await client.step(
      pw2.sessionId,
      'totp',
      { code: await totpCode(secret, clock.now()) },
      { ip },
    );
    expect(second.body.status).toBe('completed');
  });

  it('forced setup never runs for someone who proved nothing', async () => {
    // A funnel that identifies without authenticating: the mandatory TOTP can't be "set up" by whoever typed the email.
    await setLoginFunnel([
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'totp', mandatory: true, order: 20 },
    ]);
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    expect(identified.nextStep).toBe('totp');
    expect((await client.step(identified.sessionId, 'totp', { code: '123456' }, { ip })).status).toBe(401);
  });

  it('a non-mandatory step the user turned off is skipped; a mandatory one can not be turned off', async () => {
    await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    // Mandatory password: refused.
    const mandatory = await client.delete('/security/auth-methods/password', { token: login.accessToken });
    expect(mandatory.status).toBe(409);
    expect(mandatory.body.error).toBe('method_mandatory');

    await setLoginFunnel([
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'password', mandatory: false, order: 20 },
    ]);
    // The password is the only way in: turning it off is refused (account rule 5).
    const last = await client.delete('/security/auth-methods/password', { token: login.accessToken });
    expect(last.status).toBe(409);
    expect(last.body.error).toBe('last_sign_in_method');

    const secret = await setUpTotp(client, login, clock);
    const off = await client.delete('/security/auth-methods/password', { token: login.accessToken });
    expect(off.status).toBe(200);
    clock.advance(30_000);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    expect(identified.nextStep).toBe('totp');
    const done = await client.step(
      identified.sessionId,
      'totp',
      { code: await totpCode(secret, clock.now()) },
      { ip },
    );
    expect(done.body.status).toBe('completed');
    // Now the authenticator app is the last method: it can't go.
    const token = (done.body as { accessToken: string }).accessToken;
    expect((await client.delete('/security/auth-methods/totp', { token })).body.error).toBe(
      'last_sign_in_method',
    );
    // Turning the password back on restores the password step.
    expect((await client.post('/security/auth-methods/password/setup', undefined, { token })).status).toBe(
      200,
    );
    const back = await client.start('login', { ip });
    const id3 = await client.pass(back.sessionId, 'phone-email', { identifier: user.email }, { ip });
    expect(id3.nextStep).toBe('password');
  });
});
