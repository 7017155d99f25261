import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/cli/run-command.js';
import { requestFrom } from '../../src/http/request-info.js';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { bearerCall } from '../support/bearer-call.js';
import { createTestUser } from '../support/fixtures.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

// Registration profile fields (user_field_definitions) for administrators: the admin API and its CLI
// parity, against one running service.
let service: TestService;
let adminToken: string;
let otherToken: string;

beforeAll(async () => {
  service = await startTestService();
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
  const other = await createTestUser(service.service.db);
  otherToken = await mainAuthToken(service, other, { permissions: ['identity.users.manage'] });
});
afterAll(() => service?.close());

const db = () => service.service.db;

async function call(method: string, path: string, body?: unknown, token = adminToken) {
  const { status, body: answer } = await bearerCall(service, method, `/api/v2/admin${path}`, token, body);
  return { status, body: answer };
}

async function idp(...argv: string[]) {
  const result = await runCommand(argv, async () => ({ db: db(), clock: service.service.clock }));
  return { ...result, json: () => JSON.parse(result.stdout) as Record<string, unknown> };
}

/** What the registration's profile step asks for now. */
async function registrationAsks(): Promise<string[]> {
  await replaceFunnel(
    db(),
    'registration',
    [
      { stepId: 'profile', mandatory: true, order: 1 },
      { stepId: 'phone-email', mandatory: true, order: 2 },
    ],
    new Date(),
  );
  const request = requestFrom('203.0.113.40', 'profile-fields test');
  const flow = await service.service.flows.start('registration', request, request);
  const [screen] = await service.service.flows.describe(flow, request);
  return screen!.fields.map((field) => field.name);
}

const inn = {
  key: 'inn',
  title: 'INN',
  type: 'text',
  required: true,
  validation: { pattern: '[0-9]{12}' },
  order: 10,
};

describe('admin API: registration profile fields', () => {
  it('creates, lists, changes and deletes a field; registration follows; every change audited', async () => {
    const created = await call('POST', '/profile-fields', inn);
    expect(created).toEqual({ status: 201, body: { ...inn, isActive: true } });
    expect(await registrationAsks()).toContain('inn');
    const listed = await call('GET', '/profile-fields');
    expect(listed.body.fields).toContainEqual({ ...inn, isActive: true });

    const again = await call('POST', '/profile-fields', inn);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('field_exists');

    const changed = await call('PATCH', '/profile-fields/inn', { title: 'Taxpayer number', isActive: false });
    expect(changed.body).toMatchObject({
      key: 'inn',
      title: 'Taxpayer number',
      required: true,
      isActive: false,
    });
    expect(await registrationAsks()).not.toContain('inn');

    const deleted = await call('DELETE', '/profile-fields/inn');
    expect(deleted).toEqual({ status: 200, body: { key: 'inn', deleted: true, deletedAnswers: 0 } });
    expect((await call('GET', '/profile-fields')).body.fields).not.toContainEqual(
      expect.objectContaining({ key: 'inn' }),
    );
    expect((await call('DELETE', '/profile-fields/inn')).status).toBe(404);

    const events = await listAuditEvents(db(), { limit: 20 });
    const ours = events.filter((event) => event.type.startsWith('admin.profile_field.'));
    expect(ours.map((event) => event.type)).toEqual(
      expect.arrayContaining([
        'admin.profile_field.created',
        'admin.profile_field.updated',
        'admin.profile_field.deleted',
      ]),
    );
    expect(ours.find((event) => event.type === 'admin.profile_field.updated')).toMatchObject({
      details: expect.objectContaining({
        via: 'api',
        before: expect.objectContaining({ title: 'INN' }),
        after: expect.objectContaining({ title: 'Taxpayer number' }),
      }),
    });
  });

  it('refuses what cannot work and writes nothing', async () => {
    const select = await call('POST', '/profile-fields', { key: 'gender', title: 'Gender', type: 'select' });
    expect(select.status).toBe(400);
    expect(select.body).toMatchObject({
      error: 'invalid_field',
      details: [{ path: 'validation.options', message: 'a select field needs options' }],
    });
    const badPattern = await call('POST', '/profile-fields', {
      ...inn,
      key: 'x',
      validation: { pattern: '(' },
    });
    expect(badPattern.status).toBe(400);
    const badKey = await call('POST', '/profile-fields', { ...inn, key: 'Not A Key' });
    expect(badKey.status).toBe(400);
    expect(await db()('user_field_definitions').whereIn('key', ['gender', 'x'])).toEqual([]);

    await call('POST', '/profile-fields', { key: 'city', title: 'City', type: 'text' });
    const toSelect = await call('PATCH', '/profile-fields/city', { type: 'select' });
    expect(toSelect.status).toBe(400);
    expect((await call('GET', '/profile-fields')).body.fields).toContainEqual(
      expect.objectContaining({ key: 'city', type: 'text' }),
    );
    expect((await call('PATCH', '/profile-fields/nowhere', { title: 'x' })).status).toBe(404);
  });

  it('keeps a field users answered unless told to delete the answers too', async () => {
    await call('POST', '/profile-fields', { key: 'nickname', title: 'Nickname', type: 'text' });
    const user = await createTestUser(db());
    await db()('user_field_values').insert({ user_id: user.id, field_key: 'nickname', value: 'ada' });
    const refused = await call('DELETE', '/profile-fields/nickname');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: 'field_in_use', details: { answers: 1 } });
    expect(await db()('user_field_values').where({ field_key: 'nickname' })).toHaveLength(1);
    const deleted = await call('DELETE', '/profile-fields/nickname?withAnswers=true');
    expect(deleted.body).toEqual({ key: 'nickname', deleted: true, deletedAnswers: 1 });
    expect(await db()('user_field_values').where({ field_key: 'nickname' })).toEqual([]);
  });

  it('needs identity.profile_fields.manage; the operations are in the OpenAPI document', async () => {
    expect((await call('GET', '/profile-fields', undefined, otherToken)).status).toBe(403);
    expect((await call('POST', '/profile-fields', { ...inn, key: 'blocked' }, otherToken)).status).toBe(403);
    const document = (await (await fetch(service.url('/api/v2/admin/openapi.json'))).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(document.paths['/profile-fields'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(document.paths['/profile-fields/{key}'] ?? {}).sort()).toEqual(['delete', 'patch']);
  });
});

describe('npm run idp -- profile-fields:*', () => {
  it('creates, updates, lists and deletes as the API does; audited via cli', async () => {
    const created = await idp(
      'profile-fields:create',
      '--key',
      'snils',
      '--title',
      'SNILS',
      '--type',
      'text',
      '--required',
      'true',
      '--validation',
      '{"pattern": "[0-9]{11}"}',
    );
    expect(created.stderr).toBe('');
    expect(created.json()).toMatchObject({
      key: 'snils',
      required: true,
      validation: { pattern: '[0-9]{11}' },
    });
    const updated = await idp('profile-fields:update', '--key', 'snils', '--order', '5', '--active', 'false');
    expect(updated.json()).toMatchObject({ key: 'snils', order: 5, isActive: false, required: true });
    expect((await call('GET', '/profile-fields')).body.fields).toContainEqual(
      expect.objectContaining({ key: 'snils', order: 5, isActive: false }),
    );
    const listed = await idp('profile-fields:list');
    expect(listed.json().fields).toContainEqual(expect.objectContaining({ key: 'snils' }));
    const deleted = await idp('profile-fields:delete', '--key', 'snils');
    expect(deleted.json()).toEqual({ key: 'snils', deletedAnswers: 0, deleted: true });
    const [event] = await listAuditEvents(db(), { type: 'admin.profile_field.deleted', limit: 1 });
    expect(event).toMatchObject({ details: expect.objectContaining({ via: 'cli', key: 'snils' }) });
  });

  it.each([
    [['profile-fields:create', '--key', 'a'], 'needs --title and --type'],
    [['profile-fields:create', '--key', 'BAD', '--title', 't', '--type', 'text'], '--key'],
    [
      ['profile-fields:create', '--key', 'g', '--title', 't', '--type', 'select'],
      'a select field needs options',
    ],
    [['profile-fields:create', '--key', 'v', '--title', 't', '--type', 'text', '--validation', '{'], 'JSON'],
    [['profile-fields:update', '--key', 'missing-field', '--title', 'x'], 'There is no profile field'],
    [['profile-fields:update', '--key', 'a'], 'at least one property'],
  ])('refuses %j with exit code 2', async (argv, message) => {
    const result = await idp(...argv);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(message);
  });
});
