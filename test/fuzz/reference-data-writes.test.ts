import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userTokenWith } from '../platform/support/platform-tokens.js';
import { startTestService, type TestService } from '../support/test-service.js';
import {
  expectApiError,
  expectNoServerFault,
  fuzzRuns,
  fuzzTimeoutMs,
  refusalCounters,
  rowCounts,
  send,
} from './support/fuzz-http.js';
import { anyJson, hostileText, objectOf, rawJsonBody } from './support/generators.js';

/** A URL carries bytes, so a lone UTF-16 surrogate (which has none) becomes U+FFFD first. */
function percentEncoded(text: string): string {
  return encodeURIComponent(
    text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'),
  );
}

// Generated writes to the platform's reference data (create, change, delete, usages): never a 500 or a
// stack, `{ error, message, details? }` for every refusal, and a refused write changes nothing: no row
// added or removed anywhere, no entry's content changed, no event in the outbox.
let service: TestService;
let admin: string;
let reader: string;
const existingKeys = ['maths', 'physics', 'beginner', 'online', 'grades_1_4'];

beforeAll(async () => {
  service = await startTestService();
  admin = await userTokenWith(service, ['platform.reference-data.manage']);
  reader = await userTokenWith(service, []);
  for (const [entity, key] of [
    ['subjects', 'maths'],
    ['subjects', 'physics'],
    ['levels', 'beginner'],
    ['formats', 'online'],
  ] as const) {
    const created = await send(service.issuer, {
      method: 'POST',
      path: `/api/v2/platform/reference/${entity}`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ key, title: { en: key } }),
    });
    expect([201, 409], created.text).toContain(created.status); // 409: the migrations seed it
  }
}, 120_000); // a service and its fixtures: slow on a loaded machine
afterAll(() => service?.close());

const entity = fc.constantFrom('subjects', 'levels', 'formats', 'grade-ranges', 'colours');
const key = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...existingKeys, 'new_subject', 'grades_5_9') },
  { weight: 1, arbitrary: hostileText.map(percentEncoded) },
);
const localized = fc.oneof(
  fc.constant({ en: 'Title', ru: 'Заголовок' }),
  fc.dictionary(fc.constantFrom('en', 'ru', 'xx', 'EN', ''), fc.oneof(hostileText, anyJson), { maxKeys: 3 }),
);
const body = objectOf({
  key: fc.constantFrom('new_subject', 'maths', 'grades_5_9', 'Bad Key', ''),
  title: localized,
  description: fc.oneof(localized, fc.constant(null)),
  parent_key: fc.constantFrom('maths', 'physics', 'missing', null),
  display_order: fc.oneof(fc.integer(), fc.double()),
  is_active: fc.boolean(),
  min_grade: fc.integer({ min: -5, max: 30 }),
  max_grade: fc.integer({ min: -5, max: 30 }),
  min_age: fc.integer({ min: -5, max: 200 }),
  max_age: fc.integer({ min: -5, max: 200 }),
});

/** What a refused write must leave as it was. */
async function writtenState() {
  const { db } = service.service;
  return {
    rows: await rowCounts(db, refusalCounters),
    entries: await db('reference_data_entries').orderBy(['entity', 'key']).select('*'),
  };
}

describe('fuzzing the reference-data writes', () => {
  it(
    `POST, PATCH, DELETE, usages: ${fuzzRuns} generated writes`,
    async () => {
      const write = fc.record({
        method: fc.constantFrom('POST', 'PATCH', 'PATCH', 'DELETE', 'PUT', 'DELETE-USAGE'),
        entity,
        key,
        usedBy: fc.oneof(fc.constantFrom('crm', 'lms', 'billing'), hostileText.map(percentEncoded)),
        body: rawJsonBody(body),
        token: fc.constantFrom(admin, admin, admin, reader, 'garbage'),
      });
      await fc.assert(
        fc.asyncProperty(write, async (request) => {
          const base = `/api/v2/platform/reference/${request.entity}`;
          const [method, path] =
            request.method === 'POST'
              ? ['POST', base]
              : request.method === 'PUT'
                ? ['PUT', `${base}/${request.key}/usages/${request.usedBy}`]
                : request.method === 'DELETE-USAGE'
                  ? ['DELETE', `${base}/${request.key}/usages/${request.usedBy}`]
                  : [request.method, `${base}/${request.key}`];
          const what = `${method} ${path} ${request.body}`;
          const before = await writtenState();
          const response = await send(service.issuer, {
            method,
            path,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${request.token}` },
            body: method === 'POST' || method === 'PATCH' ? request.body : undefined,
          });
          expectNoServerFault(response, what);
          if (response.status >= 400) {
            expectApiError(response, what);
            expect(await writtenState(), what).toEqual(before);
          }
        }),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );
});
