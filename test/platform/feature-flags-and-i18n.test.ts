import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/events/envelope.js';
import { eventually } from '../events/support/eventually.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { platformRequest } from './support/platform-http.js';
import { serviceToken, userToken, userTokenWith } from './support/platform-tokens.js';

let svc: TestService;
const heard: Envelope[] = [];

beforeAll(async () => {
  svc = await startTestService();
  // A local subscriber on the embedded bus, as a domain module in this process would have.
  for (const messageType of ['platform.feature_flag.changed', 'platform.i18n.changed']) {
    svc.service.events.bus.subscribe(messageType, (envelope) => void heard.push(envelope));
  }
});
afterAll(() => svc?.close());

const unique = (label: string) => `${label}_${crypto.randomBytes(4).toString('hex')}`;
const heardFor = (predicate: (data: Record<string, unknown>) => boolean) =>
  heard
    .filter((envelope) => predicate(envelope.data as Record<string, unknown>))
    .map((envelope) => envelope.data);

describe('feature flags', () => {
  it('create, change and disable publish platform.feature_flag.changed with a growing numeric version', async () => {
    const admin = await userTokenWith(svc, ['platform.feature-flags.manage']);
    const key = `checkout.${unique('new_flow')}`;
    const created = await platformRequest(svc, 'POST', '/feature-flags', {
      token: admin,
      body: { key, service: 'crm', description: 'New checkout', enabled: true },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ key, service: 'crm', enabled: true, version: 1 });

    const changed = await platformRequest(svc, 'PATCH', `/feature-flags/${key}`, {
      token: admin,
      body: { description: 'New checkout, phase 2' },
    });
    expect(changed.body.version).toBe(2);
    const unchanged = await platformRequest(svc, 'PATCH', `/feature-flags/${key}`, {
      token: admin,
      body: { description: 'New checkout, phase 2' },
    });
    expect(unchanged.body.version).toBe(2);

    const disabled = await platformRequest(svc, 'POST', `/feature-flags/${key}/disable`, { token: admin });
    expect(disabled.body).toMatchObject({ enabled: false, version: 3 });
    expect(
      (await platformRequest(svc, 'POST', `/feature-flags/${key}/disable`, { token: admin })).body.version,
    ).toBe(3);

    await eventually(() =>
      expect(heardFor((data) => data.flagKey === key)).toEqual([
        { flagKey: key, service: 'crm', action: 'created', version: 1 },
        { flagKey: key, service: 'crm', action: 'updated', version: 2 },
        { flagKey: key, service: 'crm', action: 'disabled', version: 3 },
      ]),
    );

    const reader = await serviceToken(svc, ['service:platform.feature-flags.read']);
    const listed = await platformRequest(svc, 'GET', '/feature-flags?service=crm', { token: reader.token });
    expect(listed.body.items).toEqual([expect.objectContaining({ key, enabled: false, version: 3 })]);
  });

  it('an ecosystem-wide flag has no service in its event', async () => {
    const admin = await userTokenWith(svc, ['platform.feature-flags.manage']);
    const key = unique('dark_mode');
    await platformRequest(svc, 'POST', '/feature-flags', { token: admin, body: { key } });
    await eventually(() =>
      expect(heardFor((data) => data.flagKey === key)).toEqual([
        { flagKey: key, action: 'created', version: 1 },
      ]),
    );
  });

  it('refuses duplicates, bad keys and callers without the permission, writing nothing', async () => {
    const admin = await userTokenWith(svc, ['platform.feature-flags.manage']);
    const key = unique('flag');
    expect(
      (await platformRequest(svc, 'POST', '/feature-flags', { token: admin, body: { key } })).status,
    ).toBe(201);
    const eventsBefore = await svc.service.db('event_outbox').count({ count: '*' });
    const duplicate = await platformRequest(svc, 'POST', '/feature-flags', { token: admin, body: { key } });
    expect(duplicate.status).toBe(409);
    const badKey = await platformRequest(svc, 'POST', '/feature-flags', {
      token: admin,
      body: { key: 'Bad Key' },
    });
    expect(badKey.status).toBe(400);
    const emptyChange = await platformRequest(svc, 'PATCH', `/feature-flags/${key}`, {
      token: admin,
      body: {},
    });
    expect(emptyChange.status).toBe(400);
    const unknown = await platformRequest(svc, 'POST', '/feature-flags/no_such_flag/disable', {
      token: admin,
    });
    expect(unknown.status).toBe(404);
    const plainUser = await userToken(svc);
    const denied = await platformRequest(svc, 'POST', '/feature-flags', {
      token: plainUser,
      body: { key: unique('x') },
    });
    expect(denied.status).toBe(403);
    expect(await svc.service.db('event_outbox').count({ count: '*' })).toEqual(eventsBefore);
  });
});

describe('translation packages', () => {
  it('publish and revoke publish platform.i18n.changed with the string version', async () => {
    const admin = await userTokenWith(svc, ['platform.i18n.manage']);
    const namespace = unique('checkout').replace('_', '.');
    const published = await platformRequest(svc, 'POST', '/i18n/packages', {
      token: admin,
      body: { locale: 'ru', namespace, version: '1.4.0', messages: { 'button.pay': 'Оплатить' } },
    });
    expect(published.status).toBe(201);
    expect(published.body).toMatchObject({ locale: 'ru', namespace, version: '1.4.0', status: 'published' });

    const fetched = await platformRequest(svc, 'GET', `/i18n/packages/ru/1.4.0?namespace=${namespace}`, {
      token: await userToken(svc),
    });
    expect(fetched.body.messages).toEqual({ 'button.pay': 'Оплатить' });

    const revoked = await platformRequest(svc, 'POST', '/i18n/packages/revoke', {
      token: admin,
      body: { locale: 'ru', namespace, version: '1.4.0' },
    });
    expect(revoked.body).toMatchObject({ status: 'revoked' });
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    // Revoking again changes nothing and publishes nothing.
    await platformRequest(svc, 'POST', '/i18n/packages/revoke', {
      token: admin,
      body: { locale: 'ru', namespace, version: '1.4.0' },
    });

    await eventually(() =>
      expect(heardFor((data) => data.namespace === namespace)).toEqual([
        { locale: 'ru', namespace, action: 'published', version: '1.4.0' },
        { locale: 'ru', namespace, action: 'revoked', version: '1.4.0' },
      ]),
    );

    // A version is never published twice, even once revoked.
    const again = await platformRequest(svc, 'POST', '/i18n/packages', {
      token: admin,
      body: { locale: 'ru', namespace, version: '1.4.0', messages: { 'button.pay': 'Платить' } },
    });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('version_exists');
  });

  it('a package without namespace, listed by locale', async () => {
    const admin = await userTokenWith(svc, ['platform.i18n.manage']);
    const version = `2026.${crypto.randomInt(1_000_000)}`;
    await platformRequest(svc, 'POST', '/i18n/packages', {
      token: admin,
      body: { locale: 'en-GB', version, messages: { colour: 'Colour' } },
    });
    await eventually(() =>
      expect(heardFor((data) => data.version === version)).toEqual([
        { locale: 'en-GB', action: 'published', version },
      ]),
    );
    const listed = await platformRequest(svc, 'GET', '/i18n/packages?locale=en-GB', {
      token: await userToken(svc),
    });
    expect(listed.body.items).toEqual([
      expect.objectContaining({ locale: 'en-GB', namespace: null, version }),
    ]);
    expect(listed.body.items[0].messages).toBeUndefined();
  });

  it('refuses bad locales, empty packages, unknown versions and callers without the permission', async () => {
    const admin = await userTokenWith(svc, ['platform.i18n.manage']);
    const eventsBefore = await svc.service.db('event_outbox').count({ count: '*' });
    for (const body of [
      { locale: 'english', version: '1', messages: { a: 'b' } },
      { locale: 'en', version: '1', messages: {} },
      { locale: 'en', version: 'no spaces allowed', messages: { a: 'b' } },
    ]) {
      expect((await platformRequest(svc, 'POST', '/i18n/packages', { token: admin, body })).status).toBe(400);
    }
    const unknown = await platformRequest(svc, 'POST', '/i18n/packages/revoke', {
      token: admin,
      body: { locale: 'de', version: '9.9.9' },
    });
    expect(unknown.status).toBe(404);
    const flagsAdmin = await userTokenWith(svc, ['platform.feature-flags.manage']);
    const denied = await platformRequest(svc, 'POST', '/i18n/packages', {
      token: flagsAdmin,
      body: { locale: 'en', version: '1', messages: { a: 'b' } },
    });
    expect(denied.status).toBe(403);
    expect(await svc.service.db('event_outbox').count({ count: '*' })).toEqual(eventsBefore);
  });
});

describe('published contracts', () => {
  it('serves the JSON Schema of the envelope and of each platform message type', async () => {
    const response = await platformRequest(svc, 'GET', '/events/schemas');
    expect(response.status).toBe(200);
    expect(response.body.envelope.required).toEqual([
      'messageId',
      'messageType',
      'occurredAt',
      'producer',
      'data',
    ]);
    expect(Object.keys(response.body.messageTypes)).toEqual([
      'platform.reference_data.changed',
      'platform.feature_flag.changed',
      'platform.i18n.changed',
    ]);
    const referenceData = response.body.messageTypes['platform.reference_data.changed'];
    expect(referenceData.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(referenceData.properties.messageType).toEqual({
      type: 'string',
      const: 'platform.reference_data.changed',
    });
    expect(referenceData.properties.data.properties.action.enum).toEqual([
      'created',
      'updated',
      'deactivated',
    ]);
    const flag = response.body.messageTypes['platform.feature_flag.changed'];
    expect(flag.properties.data.properties.version.type).toBe('integer');
    expect(flag.properties.data.required).toEqual(['flagKey', 'action', 'version']);
    const i18n = response.body.messageTypes['platform.i18n.changed'];
    expect(i18n.properties.data.properties.version.type).toBe('string');
  });

  it('serves the platform OpenAPI document', async () => {
    const response = await platformRequest(svc, 'GET', '/openapi.json');
    expect(response.status).toBe(200);
    expect(response.body.servers[0].url).toBe(`${svc.issuer}/api/v2/platform`);
    for (const path of [
      '/reference/subjects',
      '/reference/grade-ranges/{key}',
      '/feature-flags',
      '/i18n/packages',
    ]) {
      expect(response.body.paths[path], path).toBeDefined();
    }
    expect(response.body.components.schemas.Subject.properties.parent_key).toBeDefined();
  });
});
