import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp, type FlowState } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

describe('login through /auth/flow (the base funnel)', () => {
  it('signs in by email and password: access token in the body, refresh token only in the cookie', async () => {
    const user = await createTestUser(service.service.db, { roles: ['super_admin'] });
    const ip = randomIp();
    const started = await client.start('login', { ip });
    expect(started).toMatchObject({
      status: 'in_progress',
      flow: 'login',
      nextStep: 'phone-email',
      completedSteps: [],
    });
    expect(started.screen).toEqual([
      expect.objectContaining({
        stepId: 'phone-email',
        fields: [expect.objectContaining({ name: 'identifier' })],
      }),
    ]);

    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    expect(identified).toMatchObject({ nextStep: 'password', completedSteps: ['phone-email'] });
    expect(identified.sessionId).not.toBe(started.sessionId);
    expect(identified.screen[0]).toMatchObject({ stepId: 'password', data: { identifier: user.email } });

    const done = await client.step(identified.sessionId, 'password', { password: user.password }, { ip });
    expect(done.status).toBe(200);
    expect(done.headers.get('cache-control')).toBe('no-store');
    expect(done.body).toMatchObject({
      status: 'completed',
      flow: 'login',
      userId: user.id,
      tokenType: 'Bearer',
      expiresIn: 900,
    });
    expect(JSON.stringify(done.body)).not.toContain('refresh');

    const token = done.body.accessToken;
    expect(decodeProtectedHeader(token)).toMatchObject({
      alg: 'RS256',
      typ: 'JWT',
      kid: service.service.keys.mainAuth.kid,
    });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({
      sub: user.id,
      iss: service.issuer,
      aud: service.service.config.apiAudience,
      sessionId: done.body.sessionId,
      auth_method: 'pwd',
      roles: ['super_admin'],
      permissions: ['*'],
    });
    expect(typeof claims.tokenId).toBe('string');
    expect(claims.exp! - claims.iat!).toBe(900);
    // No PII in the main-auth token.
    expect(JSON.stringify(claims)).not.toContain(user.email!);

    const me = await client.get('/auth/me', { token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      id: user.id,
      email: user.email,
      roles: ['super_admin'],
      mfaProtected: false,
    });
  });

  it('sets the refresh cookie httpOnly, Secure, SameSite=Strict, scoped to /auth/refresh and /auth/logout', async () => {
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const cookies = login.response.setCookies.filter((cookie) => cookie.name === 'service_id_refresh_token');
    expect(cookies.map((cookie) => cookie.attributes.path).sort()).toEqual([
      '/api/v2/identity/auth/logout',
      '/api/v2/identity/auth/refresh',
    ]);
    for (const cookie of cookies) {
      expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(cookie.attributes).toMatchObject({ httponly: true, secure: true, samesite: 'Strict' });
      // 30 days (the session's lifetime), give or take the second the request took.
      expect(Number(cookie.attributes['max-age'])).toBeGreaterThan(30 * 24 * 60 * 60 - 5);
      expect(Number(cookie.attributes['max-age'])).toBeLessThanOrEqual(30 * 24 * 60 * 60);
    }
    // The token is stored hashed only.
    const stored = await service.service.db('refresh_tokens').where({ session_id: login.sessionId }).first();
    expect(JSON.stringify(stored)).not.toContain(login.refreshToken);

    const device = login.response.setCookies.find((cookie) => cookie.name === 'service_id_device');
    expect(device?.attributes).toMatchObject({ httponly: true, secure: true, samesite: 'Lax', path: '/' });
  });

  it('signs in by phone as well', async () => {
    const phone = uniquePhone();
    const user = await createTestUser(service.service.db, { phone, phoneVerified: true });
    const login = await client.login(phone.replace('+1', '+1 '), user.password);
    expect(login.userId).toBe(user.id);
  });

  it('answers a wrong password and an unknown account the same way, and keeps the flow where it was', async () => {
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const attempts: { status: number; body: unknown }[] = [];
    for (const identifier of [user.email!, uniqueEmail('nobody')]) {
      const started = await client.start('login', { ip });
      const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, { ip });
      expect(identified.nextStep).toBe('password');
      const wrong = await client.step(
        identified.sessionId,
        'password',
        { password: 'not the password' },
        { ip },
      );
      // The same answer but for the request's own id.
      const { request_id: requestId, ...body } = wrong.body;
      expect(requestId).toBe(wrong.headers.get('x-request-id'));
      attempts.push({ status: wrong.status, body });
      if (identifier === user.email) {
        // Same session id, same step: the user can try again.
        const retry = await client.step(
          identified.sessionId,
          'password',
          { password: user.password },
          { ip },
        );
        expect(retry.body.status).toBe('completed');
      }
    }
    expect(attempts[0]).toEqual(attempts[1]);
    expect(attempts[0]).toMatchObject({ status: 401, body: { error: 'invalid_credentials' } });
  });

  it('publishes the funnel configuration', async () => {
    const config = await client.get('/auth/flow/config');
    expect(config.status).toBe(200);
    expect(config.body).toEqual({
      login: [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'password', mandatory: true, order: 20 },
      ],
      registration: [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'otp-code', mandatory: true, order: 20 },
        { stepId: 'password', mandatory: true, order: 30 },
      ],
      allowedMethods: ['totp'],
    });
  });

  it('documents every identity endpoint in the OpenAPI 3.1 document, from the same schemas', async () => {
    const response = await fetch(service.url('/api/v2/identity/openapi.json'));
    const document = (await response.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { requestBody?: unknown; security?: unknown }>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(document.openapi).toBe('3.1.0');
    for (const [path, method] of [
      ['/auth/flow/start', 'post'],
      ['/auth/flow/step', 'post'],
      ['/auth/flow/config', 'get'],
      ['/auth/refresh', 'post'],
      ['/auth/logout', 'post'],
      ['/auth/me', 'get'],
      ['/security/sessions', 'get'],
      ['/security/sessions/{id}', 'delete'],
      ['/security/sessions/revoke-all', 'post'],
      ['/security/auth-methods', 'get'],
      ['/security/auth-methods/{type}/setup', 'post'],
      ['/security/auth-methods/{type}/verify', 'post'],
      ['/security/auth-methods/{type}', 'delete'],
    ] as const) {
      expect(document.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
    expect(document.paths['/auth/flow/step']!.post!.requestBody).toBeDefined();
    expect(document.paths['/security/sessions']!.get!.security).toEqual([{ bearer: [] }]);
    expect(document.paths['/auth/refresh']!.post!.security).toEqual([{ refreshCookie: [] }]);
    for (const schema of [
      'FlowStepRequest',
      'FlowInProgress',
      'FlowCompleted',
      'Session',
      'AuthMethod',
      'Error',
    ]) {
      expect(document.components.schemas[schema], schema).toBeDefined();
    }
  });
});

export type { FlowState };
