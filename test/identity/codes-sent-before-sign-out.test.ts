import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { createTestUser, uniquePhone } from '../support/fixtures.js';
import { bearerCall } from '../support/bearer-call.js';
import { callIdentityApi, mainAuthTokenFor, uniqueIp } from '../support/identity-api-client.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient } from './support/identity-client.js';

/**
 * A code sent for the user before their sessions all end (a password change or reset, "sign out
 * everywhere", an administrator's revocation or disable) is a sign-in or a reset begun before it: it
 * must not finish after it. Whoever read the code (a shared inbox, a phone left on the desk, a
 * notification preview) must not use it to sign in, or to set a password, once the owner has acted.
 */

let service: TestService;
let client: IdentityClient;
let adminToken: string;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
  // Login by a code sent to the email or phone (no password step), as a funnel may be set up.
  await replaceFunnel(
    service.service.db,
    'login',
    [
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'otp-code', mandatory: true, order: 20 },
    ],
    new Date(),
  );
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

const codeTo = (recipient: string) => service.service.developmentMessages.latestTo(recipient)!.code!;

/** An administrator's POST to the admin API: its status. */
const adminCall = async (path: string) =>
  (await bearerCall(service, 'POST', `/api/v2/admin${path}`, adminToken)).status;

/** A login code sent to the user's phone; answers how to use it in a new flow later. */
async function loginCodeSent(phone: string) {
  const ip = uniqueIp();
  const started = await client.start('login', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier: phone }, { ip });
  expect(identified.nextStep).toBe('otp-code');
  const sent = await client.step(identified.sessionId, 'otp-code', {}, { ip });
  expect(sent.status).toBe(202);
  const code = codeTo(phone);
  return async () => {
    const later = uniqueIp();
    const again = await client.start('login', { ip: later });
    const found = await client.pass(again.sessionId, 'phone-email', { identifier: phone }, { ip: later });
    return client.step(found.sessionId, 'otp-code', { code }, { ip: later });
  };
}

/** A password reset code sent to the user's email; answers how to use it later. */
async function resetCodeSent(email: string) {
  const ip = uniqueIp();
  expect(
    (await callIdentityApi(service, '/auth/password/forgot', { identifier: email }, { ip })).status,
  ).toBe(200);
  const code = codeTo(email);
  const password = 'someone else chose this one';
  return () =>
    callIdentityApi(
      service,
      '/auth/password/reset',
      { identifier: email, code, password, passwordConfirmation: password },
      { ip },
    );
}

/** Both codes sent, for a fresh user: a login code to the phone, a reset code to the email. */
async function codesSent() {
  const user = await createTestUser(service.service.db, { phone: uniquePhone(), phoneVerified: true });
  const useLoginCode = await loginCodeSent(user.phone!);
  const useResetCode = await resetCodeSent(user.email!);
  return { user, useLoginCode, useResetCode };
}

async function expectCodesDead(sent: Awaited<ReturnType<typeof codesSent>>) {
  expect(await sent.useLoginCode()).toMatchObject({ status: 410, body: { error: 'code_expired' } });
  expect(await sent.useResetCode()).toMatchObject({ status: 410, body: { error: 'code_expired' } });
}

describe('codes sent before every session of the user ends', () => {
  it('work until then', async () => {
    const sent = await codesSent();
    expect(await sent.useLoginCode()).toMatchObject({ status: 200, body: { status: 'completed' } });
    expect((await sent.useResetCode()).status).toBe(200);
  });

  it('a password change', async () => {
    const sent = await codesSent();
    const newPassword = 'the owner changed it just now';
    const changed = await callIdentityApi(
      service,
      '/auth/password/change',
      { currentPassword: sent.user.password, newPassword, newPasswordConfirmation: newPassword },
      { token: await mainAuthTokenFor(service, sent.user.id), ip: uniqueIp() },
    );
    expect(changed.status).toBe(200);
    await expectCodesDead(sent);
  });

  it('"sign out everywhere"', async () => {
    const sent = await codesSent();
    const token = await mainAuthTokenFor(service, sent.user.id);
    expect((await callIdentityApi(service, '/security/sessions/revoke-all', {}, { token })).status).toBe(200);
    await expectCodesDead(sent);
  });

  it('an administrator revokes the user’s sessions', async () => {
    const sent = await codesSent();
    expect(await adminCall(`/users/${sent.user.id}/revoke-sessions`)).toBe(200);
    await expectCodesDead(sent);
  });

  it('an administrator disables the user, then enables them again', async () => {
    const sent = await codesSent();
    expect(await adminCall(`/users/${sent.user.id}/disable`)).toBe(200);
    expect(await adminCall(`/users/${sent.user.id}/enable`)).toBe(200);
    await expectCodesDead(sent);
  });
});
