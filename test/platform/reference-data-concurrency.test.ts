import crypto from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';
import { platformRequest } from './support/platform-http.js';
import { serviceToken, userTokenWith } from './support/platform-tokens.js';

// Races decided by row locks and the hierarchy lock; meaningful on PostgreSQL (PGlite serialises).
let svc: TestService;
let admin: string;

beforeAll(async () => {
  svc = await startTestService();
  admin = await userTokenWith(svc, ['platform.reference-data.manage']);
});
afterAll(() => svc?.close());

const uniqueKey = (label = 'subject') => `${label}_${crypto.randomBytes(4).toString('hex')}`;
const create = (body: Record<string, unknown>) =>
  platformRequest(svc, 'POST', '/reference/subjects', { token: admin, body });

it('creates a key once when many create it at the same time', async () => {
  const key = uniqueKey();
  const responses = await Promise.all(
    Array.from({ length: 8 }, (_, index) => create({ key, title: { en: `Attempt ${index}` } })),
  );
  expect(responses.map((response) => response.status).sort()).toEqual([
    201, 409, 409, 409, 409, 409, 409, 409,
  ]);
  const events = await svc.service.db('event_outbox').whereRaw("envelope->'data'->>'key' = ?", [key]);
  expect(events).toHaveLength(1);
});

it('never lets two concurrent re-parentings build a cycle', async () => {
  for (let round = 0; round < 3; round += 1) {
    const [a, b] = [uniqueKey('a'), uniqueKey('b')];
    expect((await create({ key: a, title: { en: 'A' } })).status).toBe(201);
    expect((await create({ key: b, title: { en: 'B' } })).status).toBe(201);
    const [aUnderB, bUnderA] = await Promise.all([
      platformRequest(svc, 'PATCH', `/reference/subjects/${a}`, { token: admin, body: { parent_key: b } }),
      platformRequest(svc, 'PATCH', `/reference/subjects/${b}`, { token: admin, body: { parent_key: a } }),
    ]);
    expect([aUnderB.status, bUnderA.status].sort()).toEqual([200, 400]);
    const rows = await svc.service
      .db('reference_data_entries')
      .whereIn('key', [a, b])
      .select('key', 'parent_key');
    expect(rows.filter((row) => row.parent_key !== null)).toHaveLength(1);
  }
});

it('a delete racing a new usage or child either deletes first or sees them and deactivates', async () => {
  const usage = await serviceToken(svc, ['service:platform.reference-data.usage.write']);
  for (let round = 0; round < 4; round += 1) {
    const key = uniqueKey('raced');
    expect((await create({ key, title: { en: 'Raced' } })).status).toBe(201);
    const [deleted, recorded, child] = await Promise.all([
      platformRequest(svc, 'DELETE', `/reference/subjects/${key}`, { token: admin }),
      platformRequest(svc, 'PUT', `/reference/subjects/${key}/usages/course:${round}`, {
        token: usage.token,
      }),
      create({ key: uniqueKey('child'), title: { en: 'Child' }, parent_key: key }),
    ]);
    const row = await svc.service.db('reference_data_entries').where({ entity: 'subject', key }).first();
    const usages = await svc.service.db('reference_data_usages').where({ key });
    const children = await svc.service.db('reference_data_entries').where({ parent_key: key });
    if (deleted.body.result === 'deleted') {
      // Deleted first: the others found no key (404 / invalid parent) and wrote nothing.
      expect(row.deleted_at).not.toBeNull();
      expect(recorded.status).toBe(404);
      expect(child.status).toBe(400);
      expect(usages).toHaveLength(0);
      expect(children).toHaveLength(0);
    } else {
      expect(deleted.body.result).toBe('deactivated');
      expect(row.deleted_at).toBeNull();
      expect(usages.length + children.length).toBeGreaterThan(0);
      expect(deleted.body.in_use).toEqual({ child_subjects: children.length, usages: usages.length });
    }
  }
});
