import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { findUserById } from '../../src/identity/users/user.js';
import { createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { callIdentityApi, mainAuthTokenFor, uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
});
afterAll(() => service?.close());
afterEach(() => {
  vi.useRealTimers();
});

async function signedIn(options: Parameters<typeof createTestUser>[1] = {}, authTime?: Date) {
  const user = await createTestUser(service.service.db, options);
  const token = await mainAuthTokenFor(service, user.id, authTime ? { authTime } : {});
  const ip = uniqueIp();
  const call = (path: string, body: unknown) => callIdentityApi(service, path, body, { token, ip });
  return { user, token, call };
}

const latestCode = (to: string) => service.service.developmentMessages.latestTo(to)?.code;

describe('POST /auth/verify/send and /auth/verify/confirm', () => {
  it('adds a phone to the account: a code by SMS, then confirmed', async () => {
    const { user, call } = await signedIn();
    const phone = uniquePhone();
    const sent = await call('/auth/verify/send', { identifier: phone });
    expect(sent).toMatchObject({
      status: 200,
      body: { status: 'code_sent', expiresInSeconds: 600, resendAfterSeconds: 60 },
    });
    const message = service.service.developmentMessages.latestTo(phone)!;
    expect(message).toMatchObject({ channel: 'sms', purpose: 'contact_verify' });

    const wrong = message.code === '000000' ? '111111' : '000000';
    const refused = await call('/auth/verify/confirm', { identifier: phone, code: wrong });
    expect(refused).toMatchObject({
      status: 400,
      body: { error: 'invalid_code', details: { attemptsLeft: 4 } },
    });

    const confirmed = await call('/auth/verify/confirm', { identifier: phone, code: message.code });
    expect(confirmed).toMatchObject({
      status: 200,
      body: { status: 'verified', kind: 'phone', value: phone },
    });
    expect(await findUserById(service.service.db, user.id)).toMatchObject({ phone, phoneVerified: true });
    const [event] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.contactVerified,
    });
    expect(event).toMatchObject({ details: { kind: 'phone', value: phone } });
  });

  it('confirms an email the account has but never confirmed', async () => {
    const { user, call } = await signedIn({ emailVerified: false });
    expect((await call('/auth/verify/send', { identifier: user.email })).status).toBe(200);
    await call('/auth/verify/confirm', { identifier: user.email, code: latestCode(user.email!) });
    expect(await findUserById(service.service.db, user.id)).toMatchObject({ emailVerified: true });
  });

  it('replaces a confirmed email only after a recent sign-in (re-authentication)', async () => {
    const stale = await signedIn({}, new Date(Date.now() - 60 * 60 * 1000));
    const next = uniqueEmail('next');
    const refused = await stale.call('/auth/verify/send', { identifier: next });
    expect(refused).toMatchObject({ status: 401, body: { error: 'reauthentication_required' } });

    const fresh = await signedIn();
    expect((await fresh.call('/auth/verify/send', { identifier: next })).status).toBe(200);
    await fresh.call('/auth/verify/confirm', { identifier: next, code: latestCode(next) });
    expect(await findUserById(service.service.db, fresh.user.id)).toMatchObject({
      email: next,
      emailVerified: true,
    });
    const [event] = await listAuditEvents(service.service.db, {
      userId: fresh.user.id,
      type: auditEventTypes.contactVerified,
    });
    expect(event!.details).toMatchObject({ kind: 'email', value: next, replaced: fresh.user.email });
  });

  it('ends the codes sent to a replaced email: a reset asked for there no longer resets', async () => {
    const { user, call } = await signedIn();
    const ip = uniqueIp();
    const old = user.email!;
    expect(
      (await callIdentityApi(service, '/auth/password/forgot', { identifier: old }, { ip })).status,
    ).toBe(200);
    const resetCode = latestCode(old)!;
    const next = uniqueEmail('next');
    expect((await call('/auth/verify/send', { identifier: next })).status).toBe(200);
    expect((await call('/auth/verify/confirm', { identifier: next, code: latestCode(next) })).status).toBe(
      200,
    );

    // Whoever still reads the old mailbox can't use what was sent there to take the account.
    const password = 'a passphrase from the old mailbox';
    const reset = await callIdentityApi(
      service,
      '/auth/password/reset',
      { identifier: old, code: resetCode, password, passwordConfirmation: password },
      { ip },
    );
    expect(reset).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
  });

  it("refuses another account's contact once the code proved it, and an already confirmed one", async () => {
    const other = await createTestUser(service.service.db);
    const { user, call } = await signedIn();
    // Asking tells nothing about who has an account: the same answer as for an address nobody has.
    const free = await call('/auth/verify/send', { identifier: uniqueEmail('free') });
    const taken = await call('/auth/verify/send', { identifier: other.email });
    expect(taken.status).toBe(free.status);
    expect(Object.keys(taken.body)).toEqual(Object.keys(free.body));
    expect(taken.body).toMatchObject({ status: 'code_sent' });
    // Only whoever reads the address learns that another account has it.
    const refused = await call('/auth/verify/confirm', {
      identifier: other.email,
      code: latestCode(other.email!),
    });
    expect(refused).toMatchObject({ status: 409, body: { error: 'identifier_taken' } });
    expect(await findUserById(service.service.db, other.id)).toMatchObject({ email: other.email });
    expect(await findUserById(service.service.db, user.id)).toMatchObject({ email: user.email });

    expect((await call('/auth/verify/send', { identifier: user.email })).body).toMatchObject({
      error: 'already_verified',
    });
  });

  it('gives a contact to the first account that confirms it; the other gets 409', async () => {
    const contested = uniqueEmail('contested');
    const first = await signedIn({ email: uniqueEmail(), password: null });
    const second = await signedIn({ email: uniqueEmail(), password: null });
    // Both ask before either confirms; each code is bound to the account that asked.
    await first.call('/auth/verify/send', { identifier: contested });
    const firstCode = latestCode(contested);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 61_000);
    await second.call('/auth/verify/send', { identifier: contested });
    const secondCode = latestCode(contested);
    vi.useRealTimers();

    expect(
      (await second.call('/auth/verify/confirm', { identifier: contested, code: secondCode })).status,
    ).toBe(200);
    const late = await first.call('/auth/verify/confirm', { identifier: contested, code: firstCode });
    expect(late).toMatchObject({ status: 409, body: { error: 'identifier_taken' } });
    expect(await findUserById(service.service.db, first.user.id)).toMatchObject({ email: first.user.email });
    expect(await findUserById(service.service.db, second.user.id)).toMatchObject({
      email: contested,
      emailVerified: true,
    });
  });

  it('keeps a code to the account it was sent for', async () => {
    const owner = await signedIn();
    const intruder = await signedIn();
    const phone = uniquePhone();
    await owner.call('/auth/verify/send', { identifier: phone });
    const stolen = await intruder.call('/auth/verify/confirm', {
      identifier: phone,
      code: latestCode(phone),
    });
    expect(stolen).toMatchObject({ status: 410, body: { error: 'code_expired' } });
    expect(
      (await owner.call('/auth/verify/confirm', { identifier: phone, code: latestCode(phone) })).status,
    ).toBe(200);
  });

  it('needs a main-auth access token and a valid body', async () => {
    expect((await callIdentityApi(service, '/auth/verify/send', { identifier: uniqueEmail() })).status).toBe(
      401,
    );
    expect(
      (await callIdentityApi(service, '/auth/verify/confirm', { identifier: 'x', code: '1' })).status,
    ).toBe(401);
    const { call } = await signedIn();
    expect((await call('/auth/verify/send', { identifier: 'not-an-address' })).body).toMatchObject({
      error: 'invalid_identifier',
    });
    expect((await call('/auth/verify/confirm', { identifier: uniqueEmail() })).body).toMatchObject({
      error: 'invalid_request',
    });
  });

  it('is limited to 3 per 10 minutes per IP and identifier', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { call } = await signedIn();
    const phone = uniquePhone();
    for (let index = 0; index < 3; index++) {
      expect((await call('/auth/verify/send', { identifier: phone })).status).toBe(200);
      vi.setSystemTime(Date.now() + 61_000);
    }
    const refused = await call('/auth/verify/send', { identifier: phone });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body).toMatchObject({
      details: { retryAfterSeconds: Number(refused.headers.get('retry-after')) },
    });
  });
});
