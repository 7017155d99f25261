import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { addressBlock, requestFrom } from '../../src/http/request-info.js';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { assertLoginAllowed, recordLoginFailure } from '../../src/identity/brute-force/login-protection.js';
import { bearerCall } from '../support/bearer-call.js';
import { createdInOrder, createTestUser, uniqueEmail } from '../support/fixtures.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
let admin: Awaited<ReturnType<typeof createTestUser>>;
let adminToken: string;

beforeAll(async () => {
  service = await startTestService();
  admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(method: string, path: string, body?: unknown, token = adminToken): Promise<Answer> {
  const url = `${path.startsWith('/api/') ? '' : '/api/v2/admin'}${path}`;
  const { status, body: answer } = await bearerCall(service, method, url, token, body);
  return { status, body: answer };
}

const userAgent = 'admin-api test';

/** A password login through the auth-flow engine, as the login page drives it; the HTTP status it gets. */
async function loginStatus(identifier: string, password: string, ip = '203.0.113.7'): Promise<number> {
  const { flows } = service.service;
  try {
    const started = await flows.start('login', { ip, userAgent });
    const identified = await flows.submit(
      started.session.id,
      'phone-email',
      { identifier },
      requestFrom(ip, userAgent),
    );
    if (identified.status !== 'in_progress') throw new Error('expected the password step');
    const done = await flows.submit(
      identified.session.id,
      'password',
      { password },
      requestFrom(ip, userAgent),
    );
    return done.status === 'completed' ? 200 : 0;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

/** Five wrong passwords for the user from `ip`: that source is locked out. */
async function lockOut(user: { id: string; email: string | null }, ip: string): Promise<void> {
  const protection = { db: service.service.db, clock: service.service.clock };
  for (let index = 0; index < 5; index += 1) {
    const failure = {
      userId: user.id,
      identifier: user.email!,
      ip,
      addressBlock: addressBlock(ip),
      userAgent,
      method: 'password',
    };
    await recordLoginFailure(protection, {
      ...failure,
      claim: await assertLoginAllowed(protection, failure),
    });
  }
}

describe('admin API: funnels and allowed methods', () => {
  it('replaces the login funnel; the next flow starts with the new steps; audited', async () => {
    const before = await call('GET', '/auth-flow/funnels/login');
    expect(before.status).toBe(200);
    const original = before.body.steps as { stepId: string }[];
    expect(original.map((step) => step.stepId)).toContain('phone-email');

    const steps = [
      { stepId: 'phone-email', mandatory: true, order: 1 },
      { stepId: 'otp-code', mandatory: true, order: 2 },
    ];
    const replaced = await call('PUT', '/auth-flow/funnels/login', { steps });
    expect(replaced).toMatchObject({ status: 200, body: { flow: 'login', steps } });
    const started = await service.service.flows.start('login', { ip: '203.0.113.9', userAgent });
    expect(started.session.pendingSteps).toEqual(['phone-email', 'otp-code']);

    const [event] = await listAuditEvents(service.service.db, {
      type: 'admin.auth_flow.funnel_replaced',
      limit: 1,
    });
    expect(event).toMatchObject({
      userId: admin.id,
      details: { flow: 'login', after: ['phone-email', 'otp-code'] },
    });
    expect((await call('PUT', '/auth-flow/funnels/login', { steps: original })).status).toBe(200);
  });

  it.each([
    ['an unknown step', [{ stepId: 'retina-scan', mandatory: true, order: 1 }], 'steps.0.stepId'],
    [
      'a step twice',
      [
        { stepId: 'phone-email', mandatory: true, order: 1 },
        { stepId: 'phone-email', mandatory: true, order: 2 },
      ],
      'steps.1.stepId',
    ],
    ['no step', [], 'steps'],
  ])('refuses a funnel with %s (400) and keeps the old one', async (_label, steps, path) => {
    const before = await call('GET', '/auth-flow/funnels/registration');
    const answer = await call('PUT', '/auth-flow/funnels/registration', { steps });
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_funnel', details: [{ path }] } });
    expect(await call('GET', '/auth-flow/funnels/registration')).toEqual(before);
  });

  it('refuses a login funnel in which no step proves who signs in: it would let nobody in', async () => {
    const before = await call('GET', '/auth-flow/funnels/login');
    for (const stepIds of [['phone-email'], ['phone-email', 'consent']]) {
      const steps = stepIds.map((stepId, index) => ({ stepId, mandatory: true, order: index + 1 }));
      expect(await call('PUT', '/auth-flow/funnels/login', { steps })).toMatchObject({
        status: 400,
        body: { error: 'invalid_funnel', details: [{ path: 'steps' }] },
      });
    }
    expect(await call('GET', '/auth-flow/funnels/login')).toEqual(before);
    expect(await loginStatus(admin.email!, admin.password)).toBe(200);
  });

  it('answers 400 for a flow that does not exist', async () => {
    expect(await call('GET', '/auth-flow/funnels/checkout')).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', details: [{ path: 'path.flow' }] },
    });
  });

  it('reads and replaces the allowed methods; refuses an unregistered one', async () => {
    expect(await call('GET', '/auth-flow/allowed-methods')).toEqual({
      status: 200,
      body: { methods: ['totp'] },
    });
    expect(await call('PUT', '/auth-flow/allowed-methods', { methods: [] })).toEqual({
      status: 200,
      body: { methods: [] },
    });
    expect(await call('GET', '/auth-flow/allowed-methods')).toEqual({ status: 200, body: { methods: [] } });
    const refused = await call('PUT', '/auth-flow/allowed-methods', { methods: ['totp', 'carrier-pigeon'] });
    expect(refused).toMatchObject({ status: 400, body: { details: [{ path: 'methods.1' }] } });
    expect((await call('PUT', '/auth-flow/allowed-methods', { methods: ['totp'] })).status).toBe(200);
  });

  it('needs identity.auth_flow.manage, and a recent authentication to change', async () => {
    const user = await createTestUser(service.service.db);
    const plain = await mainAuthToken(service, user, { permissions: ['identity.users.manage'] });
    expect((await call('GET', '/auth-flow/allowed-methods', undefined, plain)).status).toBe(403);
    const stale = await mainAuthToken(service, admin, {
      permissions: ['*'],
      authTime: new Date(Date.now() - 6 * 60 * 1000),
    });
    expect(await call('PUT', '/auth-flow/allowed-methods', { methods: ['totp'] }, stale)).toMatchObject({
      status: 401,
      body: { error: 'reauthentication_required' },
    });
  });
});

describe('admin API: users', () => {
  it('finds users by part of their email, a page at a time', async () => {
    const marker = `find${Date.now()}`;
    const created = [];
    for (let index = 0; index < 3; index += 1) {
      created.push(await createTestUser(service.service.db, { email: `${marker}-${index}@example.com` }));
    }
    await createdInOrder(
      service.service.db,
      'users',
      created.map((user) => ({ id: user.id })),
    );
    const page = await call('GET', `/users?search=${marker}&limit=2`);
    expect(page).toMatchObject({ status: 200, body: { total: 3, limit: 2, offset: 0 } });
    expect((page.body.users as { email: string }[]).map((user) => user.email)).toEqual([
      `${marker}-2@example.com`,
      `${marker}-1@example.com`,
    ]);
    expect(JSON.stringify(page.body)).not.toMatch(/password/);
    expect((await call('GET', '/users?limit=0')).status).toBe(400);
  });

  it('disables a user: sessions revoked, sign-in refused; enabled, they sign in again', async () => {
    const user = await createTestUser(service.service.db);
    const token = await mainAuthToken(service, user);
    expect((await call('GET', '/api/v2/identity/security/sessions', undefined, token)).status).toBe(200);
    expect(await loginStatus(user.email!, user.password)).toBe(200);

    const disabled = await call('POST', `/users/${user.id}/disable`);
    expect(disabled).toMatchObject({ status: 200, body: { id: user.id, status: 'disabled' } });
    expect((await call('GET', '/api/v2/identity/security/sessions', undefined, token)).status).toBe(401);
    expect(await loginStatus(user.email!, user.password)).toBe(401);

    expect(await call('POST', `/users/${user.id}/enable`)).toMatchObject({
      status: 200,
      body: { status: 'active' },
    });
    expect(await loginStatus(user.email!, user.password)).toBe(200);
    const types = (await listAuditEvents(service.service.db, { userId: admin.id, limit: 20 }))
      .filter((event) => event.details.targetUserId === user.id)
      .map((event) => event.type);
    expect(types).toEqual(['admin.user.enabled', 'admin.user.disabled']);
  });

  it('unlocks a locked-out user: the right password works again at once', async () => {
    const user = await createTestUser(service.service.db, { email: uniqueEmail('locked') });
    const ip = '203.0.113.50';
    await lockOut(user, ip);
    expect(await loginStatus(user.email!, user.password, ip)).toBe(429);
    expect((await call('GET', `/users/${user.id}`)).body).toMatchObject({ locked_sources: 1 });

    const unlocked = await call('POST', `/users/${user.id}/unlock`);
    expect(unlocked).toMatchObject({ status: 200, body: { locked_sources: 0 } });
    expect(await loginStatus(user.email!, user.password, ip)).toBe(200);
  });

  it('a help desk may disable anyone, but enables or unlocks only users holding no more than it', async () => {
    const helpDesk = await createTestUser(service.service.db);
    const helpDeskToken = await mainAuthToken(service, helpDesk, {
      permissions: ['identity.users.manage'],
      authTime: service.service.clock.now(),
    });
    const superAdmin = await createTestUser(service.service.db, { roles: ['super_admin'] });
    const ip = '203.0.113.51';
    await lockOut(superAdmin, ip);
    // Five more guesses at the super administrator's password after every unlock: refused.
    const unlock = await call('POST', `/users/${superAdmin.id}/unlock`, undefined, helpDeskToken);
    expect(unlock).toMatchObject({
      status: 403,
      body: { error: 'forbidden', details: { permissions: ['*'] } },
    });
    expect(await loginStatus(superAdmin.email!, superAdmin.password, ip)).toBe(429);

    const disabled = await call('POST', `/users/${superAdmin.id}/disable`, undefined, helpDeskToken);
    expect(disabled).toMatchObject({ status: 200, body: { status: 'disabled' } });
    const enable = await call('POST', `/users/${superAdmin.id}/enable`, undefined, helpDeskToken);
    expect(enable).toMatchObject({ status: 403, body: { details: { permissions: ['*'] } } });
    expect((await call('GET', `/users/${superAdmin.id}`)).body).toMatchObject({ status: 'disabled' });

    // A user holding no more than the help desk: both, as before.
    const plain = await createTestUser(service.service.db);
    expect(await call('POST', `/users/${plain.id}/disable`, undefined, helpDeskToken)).toMatchObject({
      status: 200,
    });
    expect(await call('POST', `/users/${plain.id}/enable`, undefined, helpDeskToken)).toMatchObject({
      status: 200,
      body: { status: 'active' },
    });
    expect(await call('POST', `/users/${plain.id}/unlock`, undefined, helpDeskToken)).toMatchObject({
      status: 200,
    });
    expect((await call('POST', `/users/${superAdmin.id}/enable`)).status).toBe(200);
    expect((await call('POST', `/users/${superAdmin.id}/unlock`)).status).toBe(200);
  });

  it('revokes every session of a user', async () => {
    const user = await createTestUser(service.service.db);
    const tokens = [await mainAuthToken(service, user), await mainAuthToken(service, user)];
    expect((await call('POST', `/users/${user.id}/revoke-sessions`)).status).toBe(200);
    for (const token of tokens) {
      expect((await call('GET', '/api/v2/identity/security/sessions', undefined, token)).status).toBe(401);
    }
  });

  it('answers 404 for an unknown user and 400 for a malformed id', async () => {
    expect((await call('POST', '/users/3f2a6c1e-8d4b-4c7a-9e2f-1b5d6a7c8e9f/unlock')).status).toBe(404);
    expect(await call('GET', '/users/42')).toMatchObject({
      status: 400,
      body: { details: [{ path: 'path.userId' }] },
    });
  });

  it('needs identity.users.manage (403) and a recent authentication to disable (401)', async () => {
    const user = await createTestUser(service.service.db);
    const plain = await mainAuthToken(service, user);
    expect((await call('POST', `/users/${user.id}/disable`, undefined, plain)).status).toBe(403);
    const stale = await mainAuthToken(service, admin, {
      permissions: ['*'],
      authTime: new Date(Date.now() - 6 * 60 * 1000),
    });
    expect((await call('POST', `/users/${user.id}/disable`, undefined, stale)).status).toBe(401);
    expect((await call('GET', `/users/${user.id}`)).body).toMatchObject({ status: 'active' });
  });
});
