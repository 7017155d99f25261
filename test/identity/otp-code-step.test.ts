import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { renderView } from '../../src/http/pages.js';
import { requestFrom } from '../../src/http/request-info.js';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { AuthFlowEngine, type FlowOutcome } from '../../src/identity/auth-flow/flow-engine.js';
import { StepRegistry } from '../../src/identity/auth-flow/step-registry.js';
import { createOtpCodeStep } from '../../src/identity/auth-flow/steps/otp-code.js';
import { phoneEmailStep } from '../../src/identity/auth-flow/steps/phone-email.js';
import { createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { callIdentityApi, mainAuthTokenFor, uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
let codeOnly: AuthFlowEngine;
beforeAll(async () => {
  service = await startTestService();
  const { db, clock, transports, rateLimits } = service.service;
  // The funnel "replaced by code-only login": identify, then a code instead of the password.
  const steps = new StepRegistry()
    .register(phoneEmailStep)
    .register(createOtpCodeStep({ transports, rateLimits }));
  codeOnly = new AuthFlowEngine(db, clock, steps, { stepsFor: async () => ['phone-email', 'otp-code'] });
});
afterAll(() => service?.close());

async function outcomeOf(promise: Promise<FlowOutcome>): Promise<FlowOutcome | ApiError> {
  try {
    return await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

/** Starts a code-only login and passes the identifier step; returns the flow session id. */
async function identify(identifier: string, request = requestFrom(uniqueIp(), 'otp test')) {
  const started = await codeOnly.start('login', request);
  const identified = await codeOnly.submit(started.session.id, 'phone-email', { identifier }, request);
  if (identified.status !== 'in_progress') throw new Error('expected the otp-code step');
  expect(identified.nextStep).toBe('otp-code');
  return { sessionId: identified.session.id, request };
}

describe('built-in step otp-code (login by a code)', () => {
  it('sends a code to the identifier, then signs the user in with it', async () => {
    const user = await createTestUser(service.service.db);
    const { sessionId, request } = await identify(user.email!);

    const sent = await outcomeOf(codeOnly.submit(sessionId, 'otp-code', {}, request));
    expect(sent).toBeInstanceOf(ApiError);
    expect(sent).toMatchObject({ status: 202, code: 'code_sent', details: { resendAfterSeconds: 60 } });
    expect((sent as ApiError).message).toBe(`We sent a sign-in code to ${user.email}. Enter it to continue.`);
    const message = service.service.developmentMessages.latestTo(user.email!)!;
    expect(message).toMatchObject({ purpose: 'login', subject: 'Your sign-in code' });

    // The flow stayed on the step (same session id): the code completes it.
    const done = await codeOnly.submit(sessionId, 'otp-code', { code: message.code }, request);
    expect(done).toMatchObject({ status: 'completed', userId: user.id, authMethods: ['otp'] });
    const [succeeded] = await listAuditEvents(service.service.db, { userId: user.id });
    expect(succeeded).toMatchObject({ type: 'identity.login.succeeded', details: { method: 'otp' } });
  });

  it('refuses a code sent to an email the account has replaced since', async () => {
    const user = await createTestUser(service.service.db);
    const { sessionId, request } = await identify(user.email!);
    await outcomeOf(codeOnly.submit(sessionId, 'otp-code', {}, request));
    const code = service.service.developmentMessages.latestTo(user.email!)!.code!;

    // The owner moves to another email (the old mailbox may be why).
    const token = await mainAuthTokenFor(service, user.id);
    const next = uniqueEmail('next');
    const ip = uniqueIp();
    expect(
      (await callIdentityApi(service, '/auth/verify/send', { identifier: next }, { token, ip })).status,
    ).toBe(200);
    const confirmCode = service.service.developmentMessages.latestTo(next)!.code;
    const confirmed = await callIdentityApi(
      service,
      '/auth/verify/confirm',
      { identifier: next, code: confirmCode },
      { token, ip },
    );
    expect(confirmed.status).toBe(200);

    const late = await outcomeOf(codeOnly.submit(sessionId, 'otp-code', { code }, request));
    expect(late).toMatchObject({ status: 400, code: 'invalid_code' });
  });

  it('works with a phone and the SMS transport', async () => {
    const phone = uniquePhone();
    const user = await createTestUser(service.service.db, { phone, phoneVerified: true });
    const { sessionId, request } = await identify(phone);
    await outcomeOf(codeOnly.submit(sessionId, 'otp-code', { send: 'true' }, request));
    const message = service.service.developmentMessages.latestTo(phone)!;
    expect(message.channel).toBe('sms');
    const done = await codeOnly.submit(sessionId, 'otp-code', { code: message.code }, request);
    expect(done).toMatchObject({ status: 'completed', userId: user.id });
  });

  it('refuses a wrong code, writes the failed login, and locks like a password after 5 failures', async () => {
    const user = await createTestUser(service.service.db);
    const { sessionId, request } = await identify(user.email!);
    await outcomeOf(codeOnly.submit(sessionId, 'otp-code', {}, request));
    const code = service.service.developmentMessages.latestTo(user.email!)!.code!;
    const wrong = code === '000000' ? '111111' : '000000';

    const first = await outcomeOf(codeOnly.submit(sessionId, 'otp-code', { code: wrong }, request));
    expect(first).toMatchObject({ status: 400, code: 'invalid_code', details: { attemptsLeft: 4 } });
    for (let index = 0; index < 4; index++)
      await outcomeOf(codeOnly.submit(sessionId, 'otp-code', { code: wrong }, request));
    // Locked before the code is even looked at: the right code gets the same 429.
    const locked = await outcomeOf(codeOnly.submit(sessionId, 'otp-code', { code }, request));
    expect(locked).toMatchObject({
      status: 429,
      code: 'too_many_attempts',
      headers: { 'Retry-After': '30' },
    });
    const failures = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.loginFailed,
    });
    expect(failures).toHaveLength(5);
    expect(failures[0]!.details).toMatchObject({ identifier: user.email, method: 'otp' });
  });

  it('answers an identifier no account has exactly the same, and sends nothing', async () => {
    const nobody = uniqueEmail('nobody');
    const { sessionId, request } = await identify(nobody);
    const sent = await outcomeOf(codeOnly.submit(sessionId, 'otp-code', {}, request));
    expect(sent).toMatchObject({ status: 202, code: 'code_sent' });
    expect((sent as ApiError).message).toBe(`We sent a sign-in code to ${nobody}. Enter it to continue.`);
    expect(service.service.developmentMessages.latestTo(nobody)).toBeUndefined();
    const attempt = await outcomeOf(codeOnly.submit(sessionId, 'otp-code', { code: '123456' }, request));
    expect(attempt).toMatchObject({ status: 400, code: 'invalid_code' });
  });

  it('applies the code-sending limits to resends', async () => {
    const user = await createTestUser(service.service.db);
    const { sessionId, request } = await identify(user.email!);
    await outcomeOf(codeOnly.submit(sessionId, 'otp-code', {}, request));
    const resend = await outcomeOf(codeOnly.submit(sessionId, 'otp-code', { send: true }, request));
    expect(resend).toMatchObject({ status: 429 });
    expect(Number((resend as ApiError).headers['Retry-After'])).toBeLessThanOrEqual(60);
  });

  it('needs the identifier step before it', async () => {
    const lonely = new AuthFlowEngine(
      service.service.db,
      service.service.clock,
      new StepRegistry().register(createOtpCodeStep(service.service)),
      { stepsFor: async () => ['otp-code'] },
    );
    const request = requestFrom(uniqueIp(), 'test');
    const started = await lonely.start('login', request);
    const answer = await outcomeOf(lonely.submit(started.session.id, 'otp-code', {}, request));
    expect(answer).toMatchObject({ status: 409, code: 'identifier_required' });
  });

  it('has a page in the OIDC login (notice after sending, the lockout wait otherwise)', () => {
    const common = {
      action: '/en/auth/step',
      flowSessionId: 'f',
      identifier: 'ada@example.com',
      restartUrl: '/r',
    };
    const sent = renderView('interaction/otp-code', {
      ...common,
      notice: 'We sent a sign-in code to ada@example.com.',
    });
    expect(sent).toContain('data-testid="notice"');
    expect(sent).toContain('name="code"');
    expect(sent).toContain('value="otp-code"');
    const locked = renderView('interaction/otp-code', {
      ...common,
      error: 'Too many failed sign-in attempts. Try again in 30 seconds.',
      retryAfterSeconds: '30',
    });
    expect(locked).toContain('data-retry-after="30"');
    expect(locked).toContain('/assets/lockout-countdown.js');
  });
});
