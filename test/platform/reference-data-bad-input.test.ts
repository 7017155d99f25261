import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mainAuthAccessTokenTtlSeconds } from '../../src/tokens/main-auth-access-token.js';
import { createTestUser } from '../support/fixtures.js';
import { MovableClock } from '../support/manual-clock.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { platformRequest } from './support/platform-http.js';
import { serviceToken, userToken, userTokenWith } from './support/platform-tokens.js';

let svc: TestService;
let admin: string;
const clock = new MovableClock();

beforeAll(async () => {
  svc = await startTestService({ clock });
  admin = await userTokenWith(svc, ['platform.reference-data.manage']);
});
afterAll(() => svc?.close());

const uniqueKey = (label = 'subject') => `${label}_${crypto.randomBytes(4).toString('hex')}`;

/** Everything a failed write could have touched. */
async function writtenState() {
  const db = svc.service.db;
  return {
    entries: await db('reference_data_entries').orderBy(['entity', 'key']).select('*'),
    usages: await db('reference_data_usages').count({ count: '*' }),
    events: await db('event_outbox').count({ count: '*' }),
  };
}

/** Sends a bad request; expects the status and error code, and that nothing was written. */
async function expectRefused(
  request: { method: string; path: string; body?: unknown; token?: string | null },
  status: number,
  error: string,
) {
  const before = await writtenState();
  const response = await platformRequest(svc, request.method, request.path, {
    token: request.token === null ? undefined : (request.token ?? admin),
    body: request.body,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body).toMatchObject({ error, message: expect.any(String) });
  expect(await writtenState()).toEqual(before);
  return response.body;
}

describe('bad input is refused with the JSON error body and nothing written', () => {
  it('unknown entity segment: 404 naming the entities there are', async () => {
    const body = await expectRefused(
      { method: 'POST', path: '/reference/colours', body: { key: 'red', title: { en: 'Red' } } },
      404,
      'unknown_entity',
    );
    expect(body.details.entities).toEqual(['subjects', 'levels', 'formats', 'grade-ranges']);
    await expectRefused({ method: 'GET', path: '/reference/colours' }, 404, 'unknown_entity');
    await expectRefused({ method: 'DELETE', path: '/reference/colours/red' }, 404, 'unknown_entity');
  });

  it('invalid key formats', async () => {
    for (const key of [
      'Algebra',
      'linear-algebra',
      'algebra__1',
      '_algebra',
      '1algebra',
      'a'.repeat(101),
      '',
    ]) {
      const body = await expectRefused(
        { method: 'POST', path: '/reference/subjects', body: { key, title: { en: 'Algebra' } } },
        400,
        'invalid_request',
      );
      expect(body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'key' })]));
    }
    // The grade literal form is for grade ranges only.
    await expectRefused(
      { method: 'POST', path: '/reference/levels', body: { key: 'g1-2', title: { en: 'Level' } } },
      400,
      'invalid_request',
    );
    await expectRefused(
      { method: 'POST', path: '/reference/grade-ranges', body: { key: 'g1-2-3', title: { en: 'Range' } } },
      400,
      'invalid_request',
    );
  });

  it('a duplicate key: 409', async () => {
    const key = uniqueKey();
    const created = await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key, title: { en: 'History' } },
    });
    expect(created.status).toBe(201);
    await expectRefused(
      { method: 'POST', path: '/reference/subjects', body: { key, title: { en: 'History again' } } },
      409,
      'key_exists',
    );
    await expectRefused(
      { method: 'POST', path: '/reference/levels', body: { key: 'basic', title: { en: 'Basic' } } },
      409,
      'key_exists',
    );
  });

  it('a missing, empty or badly localised title', async () => {
    const titles = [
      undefined,
      {},
      { en: '' },
      { en: '   ' },
      { EN: 'Art' },
      { en_GB: 'Art' },
      { english: 'Art' },
      'Art',
    ];
    for (const title of titles) {
      const body = await expectRefused(
        { method: 'POST', path: '/reference/subjects', body: { key: uniqueKey('art'), title } },
        400,
        'invalid_request',
      );
      expect(body.details[0].path).toMatch(/^title/);
    }
    await expectRefused(
      {
        method: 'POST',
        path: '/reference/formats',
        body: {
          key: uniqueKey('camp'),
          title: { en: 'Camp' },
          description: { 'en-gb': 'lower-case region' },
        },
      },
      400,
      'invalid_request',
    );
  });

  it('fields an entity does not have, and unknown fields', async () => {
    await expectRefused(
      {
        method: 'POST',
        path: '/reference/levels',
        body: { key: uniqueKey('lvl'), title: { en: 'L' }, parent_key: 'x' },
      },
      400,
      'invalid_request',
    );
    await expectRefused(
      {
        method: 'POST',
        path: '/reference/subjects',
        body: { key: uniqueKey(), title: { en: 'S' }, min_grade: 1 },
      },
      400,
      'invalid_request',
    );
    await expectRefused(
      { method: 'PATCH', path: '/reference/levels/basic', body: { colour: 'blue' } },
      400,
      'invalid_request',
    );
  });

  it('an unknown or deleted parent_key', async () => {
    await expectRefused(
      {
        method: 'POST',
        path: '/reference/subjects',
        body: { key: uniqueKey(), title: { en: 'Orphan' }, parent_key: 'no_such_subject' },
      },
      400,
      'invalid_parent',
    );
    const gone = uniqueKey('gone');
    await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key: gone, title: { en: 'Gone' } },
    });
    await platformRequest(svc, 'DELETE', `/reference/subjects/${gone}`, { token: admin });
    await expectRefused(
      {
        method: 'POST',
        path: '/reference/subjects',
        body: { key: uniqueKey(), title: { en: 'Child' }, parent_key: gone },
      },
      400,
      'invalid_parent',
    );
  });

  it('a cyclic parent_key: the subject itself or one of its descendants', async () => {
    const [top, middle, bottom] = [uniqueKey('top'), uniqueKey('middle'), uniqueKey('bottom')];
    for (const [key, parent] of [
      [top, null],
      [middle, top],
      [bottom, middle],
    ] as const) {
      const response = await platformRequest(svc, 'POST', '/reference/subjects', {
        token: admin,
        body: { key, title: { en: key }, parent_key: parent },
      });
      expect(response.status).toBe(201);
    }
    const cycle = await expectRefused(
      { method: 'PATCH', path: `/reference/subjects/${top}`, body: { parent_key: bottom } },
      400,
      'cyclic_parent',
    );
    expect(cycle.details.chain).toEqual([top, bottom, middle, top]);
    await expectRefused(
      { method: 'PATCH', path: `/reference/subjects/${top}`, body: { parent_key: top } },
      400,
      'cyclic_parent',
    );
  });

  it('a grade range with min above max, on create and on change', async () => {
    await expectRefused(
      {
        method: 'POST',
        path: '/reference/grade-ranges',
        body: { key: 'g9-7', title: { en: 'Backwards' }, min_grade: 9, max_grade: 7 },
      },
      400,
      'invalid_request',
    );
    await expectRefused(
      {
        method: 'POST',
        path: '/reference/grade-ranges',
        body: { key: uniqueKey('seniors'), title: { en: 'Seniors' }, min_age: 70, max_age: 60 },
      },
      400,
      'invalid_request',
    );
    // g1-2 has max_grade 2: min_grade 5 alone would make the stored range empty.
    const body = await expectRefused(
      { method: 'PATCH', path: '/reference/grade-ranges/g1-2', body: { min_grade: 5 } },
      400,
      'invalid_request',
    );
    expect(body.details).toEqual([{ path: 'max_grade', message: 'must not be less than min_grade' }]);
  });

  it('changes and deletions of a key that does not exist: 404', async () => {
    await expectRefused(
      { method: 'PATCH', path: '/reference/levels/no_such_level', body: { display_order: 1 } },
      404,
      'not_found',
    );
    await expectRefused({ method: 'DELETE', path: '/reference/formats/no_such_format' }, 404, 'not_found');
  });

  it('malformed JSON', async () => {
    const before = await writtenState();
    const response = await fetch(svc.url('/api/v2/platform/reference/subjects'), {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: '{"key": "broken", ',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_json');
    expect(await writtenState()).toEqual(before);
  });
});

describe('authentication and permissions', () => {
  const newSubject = () => ({ key: uniqueKey('auth'), title: { en: 'Auth' } });

  it('no token or an invalid token: 401 with a Bearer challenge', async () => {
    await expectRefused({ method: 'GET', path: '/reference/subjects', token: null }, 401, 'unauthorized');
    await expectRefused(
      { method: 'POST', path: '/reference/subjects', token: null, body: newSubject() },
      401,
      'unauthorized',
    );
    await expectRefused(
      { method: 'POST', path: '/reference/subjects', token: 'not.a.jwt', body: newSubject() },
      401,
      'unauthorized',
    );
    const response = await fetch(svc.url('/api/v2/platform/reference/levels'));
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
  });

  it('a token that was accepted is refused once it has expired (verified tokens are remembered only until exp)', async () => {
    const user = await createTestUser(svc.service.db, { password: null });
    const lifetimeMs = mainAuthAccessTokenTtlSeconds * 1000;
    // Issued long enough ago that it expires in two seconds (of the service's clock, moved below).
    const issuedAt = new Date(clock.now().getTime() - lifetimeMs + 2000);
    const token = await mainAuthToken(svc, user, { issuedAt });
    expect((await platformRequest(svc, 'GET', '/reference/levels', { token })).status).toBe(200);
    expect((await platformRequest(svc, 'GET', '/reference/levels', { token })).status).toBe(200);
    clock.advance(2500);
    const expired = await platformRequest(svc, 'GET', '/reference/levels', { token });
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toContain('invalid_token');
  });

  it('a user without platform.reference-data.manage can read but not write: 403', async () => {
    const plainUser = await userToken(svc);
    expect((await platformRequest(svc, 'GET', '/reference/levels', { token: plainUser })).status).toBe(200);
    const body = await expectRefused(
      { method: 'POST', path: '/reference/subjects', token: plainUser, body: newSubject() },
      403,
      'forbidden',
    );
    expect(body.details).toEqual({ permission: 'platform.reference-data.manage' });
    await expectRefused(
      { method: 'PATCH', path: '/reference/levels/basic', token: plainUser, body: { display_order: 3 } },
      403,
      'forbidden',
    );
    await expectRefused(
      { method: 'DELETE', path: '/reference/levels/basic', token: plainUser },
      403,
      'forbidden',
    );
  });

  it('a user with another permission only: 403; super_admin (*): allowed', async () => {
    const other = await userTokenWith(svc, ['identity.users.manage']);
    await expectRefused(
      { method: 'POST', path: '/reference/subjects', token: other, body: newSubject() },
      403,
      'forbidden',
    );
    const superAdmin = await userToken(svc, ['super_admin']);
    const created = await platformRequest(svc, 'POST', '/reference/subjects', {
      token: superAdmin,
      body: newSubject(),
    });
    expect(created.status).toBe(201);
  });

  it('service tokens read with service:platform.reference-data.read, and never write', async () => {
    const readerService = await serviceToken(svc, ['service:platform.reference-data.read']);
    expect(
      (await platformRequest(svc, 'GET', '/reference/subjects', { token: readerService.token })).status,
    ).toBe(200);

    const otherService = await serviceToken(svc, ['service:crm.aggregates.read']);
    const denied = await expectRefused(
      { method: 'GET', path: '/reference/subjects', token: otherService.token },
      403,
      'forbidden',
    );
    expect(denied.details).toEqual({ permission: 'service:platform.reference-data.read' });

    const manager = await serviceToken(svc, ['service:platform.reference-data.manage']);
    await expectRefused(
      { method: 'POST', path: '/reference/subjects', token: manager.token, body: newSubject() },
      403,
      'forbidden',
    );
  });
});
