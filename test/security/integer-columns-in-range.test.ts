import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerCall } from '../support/bearer-call.js';
import { createTestUser } from '../support/fixtures.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

// A funnel step's and a profile field's order are stored in PostgreSQL integer columns (32 bits), but
// the API took any safe integer: 2^31 failed the insert, and the administrator got a 500 where a
// 400 naming the field belongs.
let service: TestService;
let adminToken: string;

beforeAll(async () => {
  service = await startTestService();
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());

const call = (method: string, path: string, body: unknown) =>
  bearerCall(service, method, `/api/v2/admin${path}`, adminToken, body);

describe('orders beyond a PostgreSQL integer', () => {
  it('refuses a funnel step order past 2^31 - 1 with 400', async () => {
    const answer = await call('PUT', '/auth-flow/funnels/login', {
      steps: [
        { stepId: 'phone-email', mandatory: true, order: 1 },
        { stepId: 'password', mandatory: true, order: 2 ** 31 },
      ],
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: 'invalid_request' });
    expect(JSON.stringify(answer.body)).toContain('steps.1.order');
  });

  it('refuses a profile field order past 2^31 - 1 with 400, when created or changed', async () => {
    const field = { key: 'nickname', title: 'Nickname', type: 'text' };
    const created = await call('POST', '/profile-fields', { ...field, order: -(2 ** 31) - 1 });
    expect(created.status).toBe(400);
    expect(JSON.stringify(created.body)).toContain('order');
    expect((await call('POST', '/profile-fields', { ...field, order: 1 })).status).toBe(201);
    const changed = await call('PATCH', '/profile-fields/nickname', { order: 2 ** 31 });
    expect(changed.status).toBe(400);
    expect(JSON.stringify(changed.body)).toContain('order');
  });

  it('keeps the largest order that fits', async () => {
    const changed = await call('PATCH', '/profile-fields/nickname', { order: 2 ** 31 - 1 });
    expect(changed).toMatchObject({ status: 200, body: { order: 2 ** 31 - 1 } });
  });
});
