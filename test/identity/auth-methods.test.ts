import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { allowedMethodsSetting } from '../../src/identity/auth-flow/allowed-methods.js';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { writeSetting } from '../../src/platform/settings/platform-settings.js';
import { createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, MovableClock } from './support/identity-client.js';
import { totpCode } from './support/totp-codes.js';

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

interface MethodList {
  methods: {
    type: string;
    configured: boolean;
    enabled: boolean;
    pendingVerification: boolean;
    mandatory: boolean;
  }[];
  available: string[];
}

describe('/security/auth-methods', () => {
  it('lists the methods a user has and those they may add', async () => {
    const user = await createTestUser(service.service.db, {
      email: uniqueEmail(),
      phone: uniquePhone(),
      phoneVerified: true,
    });
    const { accessToken } = await client.login(user.email!, user.password);
    const list = await client.get<MethodList>('/security/auth-methods', { token: accessToken });
    expect(list.status).toBe(200);
    expect(list.body.methods).toEqual([
      expect.objectContaining({ type: 'password', configured: true, enabled: true, mandatory: true }),
      // Verified contacts could receive codes, but the login funnel does not ask for codes.
      expect.objectContaining({ type: 'email_otp', configured: true, enabled: false, mandatory: false }),
      expect.objectContaining({ type: 'sms_otp', configured: true, enabled: false, mandatory: false }),
    ]);
    expect(list.body.available).toEqual(['totp']);
  });

  it('sets TOTP up in two moves and removes it; the secret is stored encrypted', async () => {
    const user = await createTestUser(service.service.db);
    const { accessToken: token } = await client.login(user.email!, user.password);
    const notStarted = await client.post('/security/auth-methods/totp/verify', { code: '123456' }, { token });
    expect(notStarted.status).toBe(409);
    expect(notStarted.body.error).toBe('setup_not_started');

    const setup = await client.post<{ secret: string; otpauthUrl: string }>(
      '/security/auth-methods/totp/setup',
      undefined,
      { token },
    );
    expect(setup.status).toBe(200);
    expect(decodeURIComponent(setup.body.otpauthUrl)).toContain(user.email!);
    const stored = await service.service.db('auth_method_secrets').where({ user_id: user.id });
    expect(stored).toHaveLength(1);
    expect(stored[0].ciphertext).not.toContain(setup.body.secret);
    let list = await client.get<MethodList>('/security/auth-methods', { token });
    expect(list.body.methods.find((method) => method.type === 'totp')).toMatchObject({
      pendingVerification: true,
      enabled: false,
    });

    const wrong = await client.post('/security/auth-methods/totp/verify', { code: '000000' }, { token });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_code');
    const malformed = await client.post('/security/auth-methods/totp/verify', { code: 123456 }, { token });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('invalid_request');

    const verified = await client.post(
      '/security/auth-methods/totp/verify',
      { code: await totpCode(setup.body.secret, clock.now()) },
      { token },
    );
    expect(verified.status).toBe(200);
    list = await client.get<MethodList>('/security/auth-methods', { token });
    expect(list.body.methods.find((method) => method.type === 'totp')).toMatchObject({
      configured: true,
      enabled: true,
    });
    const twice = await client.post('/security/auth-methods/totp/setup', undefined, { token });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toBe('method_already_set_up');

    const removed = await client.delete('/security/auth-methods/totp', { token });
    expect(removed.status).toBe(200);
    expect(await service.service.db('auth_method_secrets').where({ user_id: user.id })).toHaveLength(0);
    expect((await client.delete('/security/auth-methods/totp', { token })).status).toBe(404);
    const events = await listAuditEvents(service.service.db, { userId: user.id });
    expect(
      events
        .filter((event) => event.type.startsWith('identity.auth_method.'))
        .map((event) => [event.type, event.details.method]),
    ).toEqual([
      ['identity.auth_method.removed', 'totp'],
      ['identity.auth_method.added', 'totp'],
    ]);
  });

  it('refuses methods the administrator does not offer and unknown types', async () => {
    const user = await createTestUser(service.service.db);
    const { accessToken: token } = await client.login(user.email!, user.password);
    await writeSetting(service.service.db, allowedMethodsSetting, [], new Date());
    try {
      const refused = await client.post('/security/auth-methods/totp/setup', undefined, { token });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('method_not_allowed');
    } finally {
      await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
    }
    expect((await client.post('/security/auth-methods/fingerprint/setup', undefined, { token })).status).toBe(
      400,
    );
    expect(
      (await client.post('/security/auth-methods/oauth_provider/setup', undefined, { token })).status,
    ).toBe(404);
    expect((await client.post('/security/auth-methods/password/setup', undefined, { token })).status).toBe(
      409,
    );
  });

  it('turns a code method on only with a verified contact', async () => {
    await writeSetting(
      service.service.db,
      allowedMethodsSetting,
      ['totp', 'email_otp', 'sms_otp'],
      new Date(),
    );
    try {
      const user = await createTestUser(service.service.db);
      const { accessToken: token } = await client.login(user.email!, user.password);
      const sms = await client.post('/security/auth-methods/sms_otp/setup', undefined, { token });
      expect(sms.status).toBe(409);
      expect(sms.body.error).toBe('contact_not_verified');
      const email = await client.post('/security/auth-methods/email_otp/setup', undefined, { token });
      expect(email.status).toBe(200);
      expect(email.body).toMatchObject({ type: 'email_otp', status: 'enabled' });
    } finally {
      await writeSetting(service.service.db, allowedMethodsSetting, ['totp'], new Date());
    }
  });

  it('keeps at least one sign-in method under parallel removals (account rule 5)', async () => {
    // Password optional in the funnel, TOTP allowed: the user has both and removes both at once.
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const token = login.accessToken;
    const setup = await client.post<{ secret: string }>('/security/auth-methods/totp/setup', undefined, {
      token,
    });
    await client.post(
      '/security/auth-methods/totp/verify',
      { code: await totpCode(setup.body.secret, clock.now()) },
      { token },
    );
    await replaceFunnel(
      service.service.db,
      'login',
      [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'password', mandatory: false, order: 20 },
      ],
      new Date(),
    );
    try {
      const results = await Promise.all([
        client.delete('/security/auth-methods/password', { token }),
        client.delete('/security/auth-methods/totp', { token }),
      ]);
      expect(results.map((result) => result.status).sort()).toEqual([200, 409]);
      const list = await client.get<MethodList>('/security/auth-methods', { token });
      expect(list.body.methods.filter((method) => method.enabled)).toHaveLength(1);
    } finally {
      await replaceFunnel(
        service.service.db,
        'login',
        [
          { stepId: 'phone-email', mandatory: true, order: 10 },
          { stepId: 'password', mandatory: true, order: 20 },
        ],
        new Date(),
      );
    }
  });
});
