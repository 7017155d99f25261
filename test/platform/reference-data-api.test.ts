import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';
import { platformRequest } from './support/platform-http.js';
import { serviceToken, userToken, userTokenWith } from './support/platform-tokens.js';

let svc: TestService;
let reader: string;
let admin: string;

beforeAll(async () => {
  svc = await startTestService();
  reader = await userToken(svc);
  admin = await userTokenWith(svc, ['platform.reference-data.manage']);
});
afterAll(() => svc?.close());

const uniqueKey = (label = 'subject') => `${label}_${crypto.randomBytes(4).toString('hex')}`;

async function createSubject(body: Record<string, unknown>) {
  const response = await platformRequest(svc, 'POST', '/reference/subjects', { token: admin, body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function subjects(query = '') {
  const response = await platformRequest(svc, 'GET', `/reference/subjects${query}`, { token: reader });
  expect(response.status).toBe(200);
  return response.body.items as { key: string; is_active: boolean; parent_key: string | null }[];
}

describe('seeded reference data', () => {
  it('lists the spec literal levels, formats and grade ranges with English and Russian titles', async () => {
    const levels = await platformRequest(svc, 'GET', '/reference/levels', { token: reader });
    expect(levels.body.items.map((level: { key: string }) => level.key)).toEqual([
      'beginner',
      'basic',
      'advanced',
      'olympiad',
      'pro',
    ]);
    expect(levels.body.items[0]).toEqual({
      key: 'beginner',
      title: { en: 'Beginner', ru: 'Начальный' },
      display_order: 10,
      is_active: true,
    });

    const formats = await platformRequest(svc, 'GET', '/reference/formats', { token: reader });
    expect(formats.body.items.map((format: { key: string }) => format.key).sort()).toEqual(
      ['circle', 'competition', 'individual', 'intensive', 'mini_group', 'offline', 'online_course'].sort(),
    );
    expect(Object.keys(formats.body.items[0])).toEqual(['key', 'title', 'description', 'is_active']);

    const gradeRanges = await platformRequest(svc, 'GET', '/reference/grade-ranges', { token: reader });
    expect(gradeRanges.body.items.map((range: { key: string }) => range.key)).toEqual([
      'g1-2',
      'g3-4',
      'g5-6',
      'g7-8',
      'g9-11',
      'adult',
    ]);
    expect(gradeRanges.body.items[4]).toMatchObject({ key: 'g9-11', min_grade: 9, max_grade: 11 });
    expect(gradeRanges.body.items[5]).toMatchObject({ key: 'adult', min_age: 18, title: { ru: 'Взрослые' } });
  });
});

describe('reading', () => {
  it('orders subjects by display_order, filters by is_active and parent_key', async () => {
    const parent = uniqueKey('science');
    await createSubject({ key: parent, title: { en: 'Science' }, display_order: -500 });
    const late = uniqueKey('physics');
    const early = uniqueKey('biology');
    await createSubject({ key: late, title: { en: 'Physics' }, parent_key: parent, display_order: 20 });
    await createSubject({ key: early, title: { en: 'Biology' }, parent_key: parent, display_order: 10 });
    const retired = uniqueKey('alchemy');
    await createSubject({ key: retired, title: { en: 'Alchemy' }, parent_key: parent, is_active: false });

    expect((await subjects(`?parent_key=${parent}`)).map((subject) => subject.key)).toEqual([
      retired,
      early,
      late,
    ]);
    expect((await subjects(`?parent_key=${parent}&is_active=true`)).map((subject) => subject.key)).toEqual([
      early,
      late,
    ]);
    expect((await subjects('?is_active=false')).map((subject) => subject.key)).toContain(retired);
    expect((await subjects('?is_active=false')).every((subject) => !subject.is_active)).toBe(true);
    const all = (await subjects()).map((subject) => subject.key);
    expect(all.indexOf(parent)).toBeLessThan(all.indexOf(early));
  });

  it('answers 304 to If-None-Match with the current ETag, and a new ETag after a change', async () => {
    const first = await platformRequest(svc, 'GET', '/reference/subjects', { token: reader });
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/".+"$/);
    expect(first.headers.get('cache-control')).toBe('private, no-cache');

    const again = await platformRequest(svc, 'GET', '/reference/subjects', {
      token: reader,
      headers: { 'if-none-match': etag },
    });
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();

    await createSubject({ key: uniqueKey(), title: { en: 'Geography' } });
    const changed = await platformRequest(svc, 'GET', '/reference/subjects', {
      token: reader,
      headers: { 'if-none-match': etag },
    });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('serves the list uncompressed to a client that does not accept gzip', async () => {
    const response = await fetch(svc.url('/api/v2/platform/reference/levels'), {
      headers: { authorization: `Bearer ${reader}`, 'accept-encoding': 'identity' },
    });
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(((await response.json()) as { items: unknown[] }).items).toHaveLength(5);
  });

  it.each([
    ['gzip', 'gzip'],
    ['gzip;q=0, identity', null],
    ['br, gzip;q=0.5', 'gzip'],
    ['*', 'gzip'],
    ['identity;q=0, gzip;q=0.1', 'gzip'],
  ])('negotiates Accept-Encoding: %s, the same each time', async (acceptEncoding, expected) => {
    for (let index = 0; index < 2; index++) {
      const response = await fetch(svc.url('/api/v2/platform/reference/levels'), {
        headers: { authorization: `Bearer ${reader}`, 'accept-encoding': acceptEncoding },
      });
      expect(response.headers.get('content-encoding')).toBe(expected);
      expect(((await response.json()) as { items: unknown[] }).items).toHaveLength(5);
    }
  });

  it('takes a remembered token only in the header form it had: "Bearer <token>"', async () => {
    const read = (authorization: string) =>
      fetch(svc.url('/api/v2/platform/reference/levels'), { headers: { authorization } });
    expect((await read(`Bearer ${reader}`)).status).toBe(200);
    expect((await read(`bearer ${reader}`)).status).toBe(200);
    for (const malformed of [`Bearer  ${reader}`, `BearerX${reader}`, `Basic ${reader}`]) {
      const response = await read(malformed);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain('error="invalid_request"');
    }
  });

  it('reads the database for Cache-Control: no-cache, once for a burst of such requests', async () => {
    const { db } = svc.service;
    const noCache = () =>
      platformRequest(svc, 'GET', '/reference/formats', {
        token: reader,
        headers: { 'cache-control': 'no-cache' },
      });
    await noCache();
    // A change the node was not told about (made by another node whose event is still on its way).
    const [format] = await db('reference_data_entries').where({ entity: 'format', key: 'online_course' });
    await db('reference_data_entries')
      .where({ entity: 'format', key: 'online_course' })
      .update({ title: JSON.stringify({ ...format.title, en: 'Online course (changed)' }) });
    const reads: unknown[] = [];
    const countReads = (query: { sql: string; bindings?: unknown[] }) => {
      if (query.sql.includes('reference_data_entries') && query.bindings?.includes('format'))
        reads.push(query);
    };
    db.on('query', countReads);
    try {
      // Any reader may send it: twenty at once must not read and rebuild the list twenty times.
      const answers = await Promise.all(Array.from({ length: 20 }, noCache));
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        const changed = answer.body.items.find((item: { key: string }) => item.key === 'online_course');
        expect(changed.title.en).toBe('Online course (changed)');
      }
    } finally {
      db.off('query', countReads);
      await db('reference_data_entries')
        .where({ entity: 'format', key: 'online_course' })
        .update({ title: JSON.stringify(format.title) });
      await noCache();
    }
    expect(reads.length).toBe(1);
  });

  it('refuses unknown and invalid filters', async () => {
    for (const query of ['?is_active=maybe', '?color=red', '?parent_key=Not-A-Key']) {
      const response = await platformRequest(svc, 'GET', `/reference/subjects${query}`, { token: reader });
      expect(response.status, query).toBe(400);
      expect(response.body.error).toBe('invalid_request');
    }
    const levels = await platformRequest(svc, 'GET', '/reference/levels?parent_key=math', { token: reader });
    expect(levels.status).toBe(400);
  });
});

describe('writing', () => {
  it('creates every entity with its own fields', async () => {
    const level = await platformRequest(svc, 'POST', '/reference/levels', {
      token: admin,
      body: { key: uniqueKey('expert'), title: { en: 'Expert', 'en-GB': 'Expert' }, display_order: 60 },
    });
    expect(level.status).toBe(201);
    expect(Object.keys(level.body)).toEqual(['key', 'title', 'display_order', 'is_active']);

    const format = await platformRequest(svc, 'POST', '/reference/formats', {
      token: admin,
      body: { key: uniqueKey('webinar'), title: { en: 'Webinar' }, description: { en: 'Live online talk' } },
    });
    expect(format.status).toBe(201);
    expect(format.body.description).toEqual({ en: 'Live online talk' });

    const range = await platformRequest(svc, 'POST', '/reference/grade-ranges', {
      token: admin,
      body: { key: 'g10-11', title: { ru: '10–11 классы' }, min_grade: 10, max_grade: 11, display_order: 55 },
    });
    expect(range.status).toBe(201);
    expect(range.body).toEqual({
      key: 'g10-11',
      min_grade: 10,
      max_grade: 11,
      min_age: null,
      max_age: null,
      title: { ru: '10–11 классы' },
      display_order: 55,
      is_active: true,
    });
  });

  it('changes an entry but never its key', async () => {
    const key = uniqueKey();
    await createSubject({ key, title: { en: 'Chemistry' } });
    const changed = await platformRequest(svc, 'PATCH', `/reference/subjects/${key}`, {
      token: admin,
      body: { title: { en: 'Chemistry', ru: 'Химия' }, description: { en: 'Matter' }, display_order: 7 },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ key, title: { ru: 'Химия' }, description: { en: 'Matter' } });

    const renamed = await platformRequest(svc, 'PATCH', `/reference/subjects/${key}`, {
      token: admin,
      body: { key: `${key}_2`, title: { en: 'Other' } },
    });
    expect(renamed.status).toBe(400);
    expect(renamed.body.error).toBe('key_immutable');
    expect((await subjects()).find((subject) => subject.key === key)).toMatchObject({
      title: { en: 'Chemistry', ru: 'Химия' },
    });
    expect((await subjects()).some((subject) => subject.key === `${key}_2`)).toBe(false);
  });

  it('deletes an unused key, which can never be created again', async () => {
    const key = uniqueKey();
    await createSubject({ key, title: { en: 'Astrology' } });
    const deleted = await platformRequest(svc, 'DELETE', `/reference/subjects/${key}`, { token: admin });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ entity: 'subject', key, result: 'deleted' });
    expect((await subjects()).some((subject) => subject.key === key)).toBe(false);

    const again = await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key, title: { en: 'Astronomy' } },
    });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('key_retired');
    expect(
      (
        await platformRequest(svc, 'PATCH', `/reference/subjects/${key}`, {
          token: admin,
          body: { display_order: 1 },
        })
      ).status,
    ).toBe(404);
    expect(
      (await platformRequest(svc, 'DELETE', `/reference/subjects/${key}`, { token: admin })).status,
    ).toBe(404);
  });

  it('deactivates instead of deleting a subject that is another subject’s parent', async () => {
    const parent = uniqueKey('languages');
    const child = uniqueKey('english');
    await createSubject({ key: parent, title: { en: 'Languages' } });
    await createSubject({ key: child, title: { en: 'English' }, parent_key: parent });

    const response = await platformRequest(svc, 'DELETE', `/reference/subjects/${parent}`, { token: admin });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      entity: 'subject',
      key: parent,
      result: 'deactivated',
      is_active: false,
      in_use: { child_subjects: 1, usages: 0 },
    });
    expect((await subjects()).find((subject) => subject.key === parent)).toMatchObject({ is_active: false });

    // Nothing new is assigned to an inactive key.
    const another = await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key: uniqueKey(), title: { en: 'French' }, parent_key: parent },
    });
    expect(another.status).toBe(400);
    expect(another.body.error).toBe('invalid_parent');

    // Once the child is gone the parent is unused and can be deleted.
    expect(
      (await platformRequest(svc, 'DELETE', `/reference/subjects/${child}`, { token: admin })).body.result,
    ).toBe('deleted');
    expect(
      (await platformRequest(svc, 'DELETE', `/reference/subjects/${parent}`, { token: admin })).body.result,
    ).toBe('deleted');
  });
});

describe('the usage registry', () => {
  it('keeps a key a domain service uses from being deleted until the usage is released', async () => {
    const usage = await serviceToken(svc, ['service:platform.reference-data.usage.write']);
    const key = uniqueKey('robotics');
    await createSubject({ key, title: { en: 'Robotics' } });

    const recorded = await platformRequest(svc, 'PUT', `/reference/subjects/${key}/usages/course:42`, {
      token: usage.token,
    });
    expect(recorded.status).toBe(201);
    expect(recorded.body).toEqual({
      entity: 'subject',
      key,
      service: usage.clientId,
      used_by: 'course:42',
      created: true,
    });
    const repeated = await platformRequest(svc, 'PUT', `/reference/subjects/${key}/usages/course:42`, {
      token: usage.token,
    });
    expect(repeated.status).toBe(200);
    expect(repeated.body.created).toBe(false);

    const deleted = await platformRequest(svc, 'DELETE', `/reference/subjects/${key}`, { token: admin });
    expect(deleted.body).toMatchObject({ result: 'deactivated', in_use: { child_subjects: 0, usages: 1 } });

    // A deactivated key takes no new usage; the existing one can still be confirmed and released.
    const newUsage = await platformRequest(svc, 'PUT', `/reference/subjects/${key}/usages/course:43`, {
      token: usage.token,
    });
    expect(newUsage.status).toBe(409);
    expect(newUsage.body.error).toBe('key_inactive');
    expect(
      (
        await platformRequest(svc, 'PUT', `/reference/subjects/${key}/usages/course:42`, {
          token: usage.token,
        })
      ).status,
    ).toBe(200);

    const released = await platformRequest(svc, 'DELETE', `/reference/subjects/${key}/usages/course:42`, {
      token: usage.token,
    });
    expect(released.body).toMatchObject({ released: true });
    const finallyDeleted = await platformRequest(svc, 'DELETE', `/reference/subjects/${key}`, {
      token: admin,
    });
    expect(finallyDeleted.body.result).toBe('deleted');
  });

  it('works for every entity and refuses unknown keys and bad references', async () => {
    const usage = await serviceToken(svc, ['service:platform.reference-data.usage.write']);
    const recorded = await platformRequest(svc, 'PUT', '/reference/grade-ranges/g5-6/usages/course:7', {
      token: usage.token,
    });
    expect(recorded.status).toBe(201);
    const levelDelete = await platformRequest(svc, 'DELETE', '/reference/grade-ranges/g5-6', {
      token: admin,
    });
    expect(levelDelete.body.result).toBe('deactivated');

    const unknown = await platformRequest(svc, 'PUT', '/reference/levels/no_such_level/usages/course:7', {
      token: usage.token,
    });
    expect(unknown.status).toBe(404);
    const badReference = await platformRequest(svc, 'PUT', '/reference/levels/basic/usages/a%20b', {
      token: usage.token,
    });
    expect(badReference.status).toBe(400);
  });

  it('is for service tokens with service:platform.reference-data.usage.write only', async () => {
    const withoutScope = await serviceToken(svc, ['service:platform.reference-data.read']);
    const denied = await platformRequest(svc, 'PUT', '/reference/levels/basic/usages/course:1', {
      token: withoutScope.token,
    });
    expect(denied.status).toBe(403);
    const byUser = await platformRequest(svc, 'PUT', '/reference/levels/basic/usages/course:1', {
      token: admin,
    });
    expect(byUser.status).toBe(403);
    const anonymous = await platformRequest(svc, 'PUT', '/reference/levels/basic/usages/course:1');
    expect(anonymous.status).toBe(401);
    expect(await svc.service.db('reference_data_usages').where({ key: 'basic' }).first()).toBeUndefined();
  });
});
