import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveredMessage } from '../../src/identity/transports/development-transport.js';
import type { OutgoingMessage, Transport } from '../../src/identity/transports/transport.js';
import { createTestClient, createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, MovableClock, randomIp } from './support/identity-client.js';
import { totpCode } from './support/totp-codes.js';

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

const outbox = () => service.service.developmentMessages;
const securityNotices = (to: string): DeliveredMessage[] =>
  outbox()
    .messagesTo(to)
    .filter((message) => message.purpose?.startsWith('security_notice.'));
/** The notifications of changes a contact received, oldest first. */
const noticesTo = (to: string) =>
  securityNotices(to).filter((message) => message.purpose !== 'security_notice.new_device_sign_in');
/** The new-device sign-in notifications a contact received, oldest first. */
const signInNoticesTo = (to: string) =>
  securityNotices(to).filter((message) => message.purpose === 'security_notice.new_device_sign_in');

async function signedIn(fields: Parameters<typeof createTestUser>[1] = {}) {
  const user = await createTestUser(service.service.db, fields);
  const ip = randomIp();
  const login = await client.login(user.email!, user.password, { ip });
  const call = (method: string, path: string, body?: unknown) =>
    client.request(method, path, body, { token: login.accessToken, ip });
  return { user, login, ip, call };
}

/** Nothing in a notification can be used to get in: no code, no link, no six-digit number. */
function expectNothingThatGrantsAccess(message: OutgoingMessage) {
  expect(message.code).toBeUndefined();
  expect(message.link).toBeUndefined();
  expect(message.text).not.toMatch(/https?:\/\//);
  expect(message.text).not.toMatch(/\b\d{6}\b/);
}

describe('security notifications', () => {
  it('tells the previous email, in the user’s language, that the email was replaced', async () => {
    const { user, call } = await signedIn({ language: 'ru' });
    const next = uniqueEmail('next');
    expect((await call('POST', '/auth/verify/send', { identifier: next })).status).toBe(200);
    const code = outbox().latestTo(next)!.code;
    expect((await call('POST', '/auth/verify/confirm', { identifier: next, code })).status).toBe(200);

    const [notice, ...more] = noticesTo(user.email!);
    expect(more).toEqual([]);
    expect(notice).toMatchObject({
      channel: 'email',
      purpose: 'security_notice.contact_replaced',
      subject: 'Адрес электронной почты изменён',
    });
    // The old address learns that it changed, not the whole new address.
    expect(notice!.text).toContain(`n•••@example.com`);
    expect(notice!.text).not.toContain(next);
    expect(notice!.text).toContain('Если это были не вы');
    expectNothingThatGrantsAccess(notice!);
    expect(noticesTo(next)).toEqual([]);
  });

  it('tells the email that a phone was added (English when the user has no language)', async () => {
    const { user, call } = await signedIn();
    const phone = uniquePhone();
    await call('POST', '/auth/verify/send', { identifier: phone });
    await call('POST', '/auth/verify/confirm', { identifier: phone, code: outbox().latestTo(phone)!.code });
    const [notice] = noticesTo(user.email!);
    expect(notice).toMatchObject({
      purpose: 'security_notice.contact_added',
      subject: 'A phone number was added to your account',
    });
    expect(notice!.text).toContain(`+${'•'.repeat(phone.length - 3)}${phone.slice(-2)}`);
    expectNothingThatGrantsAccess(notice!);
  });

  it('tells the user of a password change and of a password reset', async () => {
    const { user, call } = await signedIn({ language: 'de' });
    const changed = await call('POST', '/auth/password/change', {
      currentPassword: user.password,
      newPassword: 'a brand new passphrase',
      newPasswordConfirmation: 'a brand new passphrase',
    });
    expect(changed.status).toBe(200);
    expect(noticesTo(user.email!).map((message) => message.subject)).toEqual(['Your password was changed']);

    const ip = randomIp();
    await client.post('/auth/password/forgot', { identifier: user.email }, { ip });
    const code = outbox().latestTo(user.email!)!.code;
    const reset = await client.post(
      '/auth/password/reset',
      {
        identifier: user.email,
        code,
        password: 'yet another passphrase',
        passwordConfirmation: 'yet another passphrase',
      },
      { ip },
    );
    expect(reset.status).toBe(200);
    const notices = noticesTo(user.email!);
    expect(notices.map((message) => message.purpose)).toEqual([
      'security_notice.password_changed',
      'security_notice.password_reset',
    ]);
    for (const notice of notices) expectNothingThatGrantsAccess(notice);
  });

  it('tells the user when a sign-in method is added and when it is removed', async () => {
    const { user, call } = await signedIn({ language: 'ru' });
    const setup = await call('POST', '/security/auth-methods/totp/setup');
    // Beginning a setup changes nothing yet.
    expect(noticesTo(user.email!)).toEqual([]);
    const secret = setup.body.secret as string;
    await call('POST', '/security/auth-methods/totp/verify', { code: await totpCode(secret, clock.now()) });
    expect((await call('DELETE', '/security/auth-methods/totp')).status).toBe(200);
    expect(noticesTo(user.email!).map((message) => [message.subject, message.text.split('\n')[0]])).toEqual([
      ['Добавлен способ входа', 'В вашу учётную запись добавлен способ входа «Приложение-аутентификатор».'],
      [
        'Способ входа отключён',
        'Способ входа «Приложение-аутентификатор» отключён или удалён из вашей учётной записи.',
      ],
    ]);
  });

  it('tells the user of a sign-in on a device they never signed in on, not on a known one', async () => {
    const user = await createTestUser(service.service.db);
    const chrome =
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    const first = await client.login(user.email!, user.password, { ip: '10.9.8.7', userAgent: chrome });
    const [notice] = signInNoticesTo(user.email!);
    expect(notice).toMatchObject({
      purpose: 'security_notice.new_device_sign_in',
      subject: 'New sign-in to your account',
    });
    expect(notice!.text).toContain('Chrome on macOS');
    expect(notice!.text).toContain('10.9.8.7');
    expect(notice!.text).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);

    // Again on the same device: known, nothing sent.
    await client.login(user.email!, user.password, { cookie: first.deviceCookie! });
    expect(signInNoticesTo(user.email!)).toHaveLength(1);

    // A device someone else signed in on is new for this user.
    const other = await createTestUser(service.service.db);
    const shared = await client.login(other.email!, other.password);
    await client.login(user.email!, user.password, { cookie: shared.deviceCookie! });
    expect(signInNoticesTo(user.email!)).toHaveLength(2);
  });

  it('tells a user of at most five new-device sign-ins an hour: no loop of sign-ins floods the mail', async () => {
    // The account's holder signs in again and again without the device cookie (each from another
    // address, under every per-address limit): every sign-in was a message through the transport the
    // whole service shares, where other people's codes waited behind them.
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    let login = await client.login(user.email!, user.password, { ip });
    for (let signIn = 1; signIn < 8; signIn++)
      login = await client.login(user.email!, user.password, { ip: randomIp() });
    expect(signInNoticesTo(user.email!)).toHaveLength(5);
    // Changes are still told: each kind of notice has a budget of its own.
    const changed = await client.request(
      'POST',
      '/auth/password/change',
      {
        currentPassword: user.password,
        newPassword: 'a brand new passphrase',
        newPasswordConfirmation: 'a brand new passphrase',
      },
      { token: login.accessToken, ip },
    );
    expect(changed.status).toBe(200);
    expect(noticesTo(user.email!).map((message) => message.purpose)).toEqual([
      'security_notice.password_changed',
    ]);
    // An hour on, the next new device is told again.
    clock.advance(60 * 60 * 1000 + 1000);
    try {
      await client.login(user.email!, 'a brand new passphrase', { ip: randomIp() });
      expect(signInNoticesTo(user.email!)).toHaveLength(6);
    } finally {
      clock.advance(-(60 * 60 * 1000 + 1000));
    }
  });

  it('tells the user of a first sign-in through the OIDC pages on a browser, not of the next one', async () => {
    const user = await createTestUser(service.service.db);
    const { client: application } = await createTestClient(service.service.db);
    const config = await discover(service.issuer, application.clientId);
    const browser = new HttpBrowser(service.issuer);
    const signIn = { identifier: user.email!, password: user.password };
    await completeAuthorization(config, browser, signIn);
    expect(signInNoticesTo(user.email!)).toHaveLength(1);
    // The same browser (its device cookie) signs in again: known, nothing sent.
    await completeAuthorization(config, browser, { ...signIn, parameters: { prompt: 'login' } });
    expect(signInNoticesTo(user.email!)).toHaveLength(1);
  });

  it('does not announce the sign-in that ends a registration', async () => {
    const email = uniqueEmail('new');
    const ip = randomIp();
    const started = await client.start('registration', { ip });
    const identified = await client.pass(started.sessionId, 'phone-email', { identifier: email }, { ip });
    const afterCode = await client.pass(
      identified.sessionId,
      'otp-code',
      { code: outbox().latestTo(email)!.code },
      { ip },
    );
    const done = await client.step(
      afterCode.sessionId,
      'password',
      { password: 'a long new passphrase' },
      { ip },
    );
    expect(done.body.status).toBe('completed');
    expect(securityNotices(email)).toEqual([]);
  });
});

describe('a transport that fails', () => {
  it('does not fail the change it reports', async () => {
    const attempts: OutgoingMessage[] = [];
    const failing: Transport = {
      name: 'broken-mail',
      label: 'Broken mail',
      channels: ['email'],
      send: async (message) => {
        attempts.push(message);
        throw new Error('the mail server is down');
      },
    };
    const broken = await startTestService({ env: { TRUST_PROXY: 'true' }, transports: [failing] });
    try {
      const brokenClient = new IdentityClient(broken);
      const user = await createTestUser(broken.service.db);
      const ip = randomIp();
      const login = await brokenClient.login(user.email!, user.password, { ip });
      const changed = await brokenClient.post(
        '/auth/password/change',
        {
          currentPassword: user.password,
          newPassword: 'a brand new passphrase',
          newPasswordConfirmation: 'a brand new passphrase',
        },
        { token: login.accessToken, ip },
      );
      expect(changed).toMatchObject({ status: 200, body: { status: 'password_changed' } });
      expect(attempts.map((message) => message.purpose)).toEqual([
        'security_notice.new_device_sign_in',
        'security_notice.password_changed',
      ]);
      // The change stands.
      await brokenClient.login(user.email!, 'a brand new passphrase');
    } finally {
      await broken.close();
    }
  });
});
