import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userTokenWith } from '../platform/support/platform-tokens.js';
import { startTestService, type TestService } from '../support/test-service.js';

// Input the database can't store is refused at the edge with 400 in its endpoint's shape, never a 500
// from a failed statement (or a recursion), and nothing is written: the NUL character (U+0000), which
// PostgreSQL can't keep in text or jsonb, and JSON nested past 32 levels.
let service: TestService;
let admin: string;
beforeAll(async () => {
  service = await startTestService();
  admin = await userTokenWith(service, ['platform.reference-data.manage']);
});
afterAll(() => service?.close());

const json = () => ({ 'content-type': 'application/json', authorization: `Bearer ${admin}` });

describe('a lone UTF-16 surrogate in a JSON body (valid JSON, no character)', () => {
  it('in a value or a key: 400 naming it, and nothing written', async () => {
    // The JSON escape written out, as a client sends it.
    const bodies = [
      ['{"key":"lone_high","title":{"en":"Alge\\ud800bra"}}', 'title.en'],
      ['{"key":"lone_low","title":{"en":"Algebra","x\\udc00":"y"}}', 'title.x\udc00'],
    ] as const;
    for (const [body, path] of bodies) {
      const response = await fetch(service.url('/api/v2/platform/reference/subjects'), {
        method: 'POST',
        headers: json(),
        body,
      });
      expect(response.status, body).toBe(400);
      expect(await response.json()).toMatchObject({
        error: 'invalid_request',
        details: [{ path, message: expect.stringContaining('well-formed Unicode') }],
      });
    }
    const rows = await service.service.db('reference_data_entries').whereIn('key', ['lone_high', 'lone_low']);
    expect(rows).toHaveLength(0);
  });

  it('a surrogate pair (an emoji) is a character like any other', async () => {
    const response = await fetch(service.url('/api/v2/platform/reference/subjects'), {
      method: 'POST',
      headers: json(),
      body: JSON.stringify({ key: 'emoji_title', title: { en: 'Algebra \u{1F4D0}' } }),
    });
    expect(response.status).toBe(201);
  });
});

describe('the NUL character in a request', () => {
  it('in a JSON body: 400 naming the field, and nothing written', async () => {
    const response = await fetch(service.url('/api/v2/platform/reference/subjects'), {
      method: 'POST',
      headers: json(),
      body: JSON.stringify({ key: 'nul_title', title: { en: 'Alge\u0000bra' } }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: 'invalid_request',
      details: [{ path: 'title.en', message: 'must not contain the NUL character (U+0000)' }],
    });
    const rows = await service.service.db('reference_data_entries').where({ key: 'nul_title' });
    expect(rows).toHaveLength(0);
  });

  it('in a JSON key: 400 naming it', async () => {
    const response = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ flow: 'login', context: { 'a\u0000b': 1 } }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { details: { path: string }[] }).details[0]!.path).toBe(
      'context.a\u0000b',
    );
  });

  it('in a path parameter of a JSON API: 400 in the JSON error shape', async () => {
    // A grade range's key in the path reached the database (the case the fuzzer found).
    const response = await fetch(service.url('/api/v2/platform/reference/grade-ranges/%00'), {
      method: 'DELETE',
      headers: json(),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: 'invalid_request',
      message: 'The URL must not contain the NUL character (U+0000).',
    });
  });

  it('in the query of an OAuth endpoint: 400 invalid_request in the RFC 6749 shape', async () => {
    const response = await fetch(service.url('/oauth/token?client_id=%00'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: 'invalid_request',
      error_description: 'The URL must not contain the NUL character (U+0000).',
    });
  });

  it('in the query of a page: the error page with 400', async () => {
    const response = await fetch(service.url('/en/auth?login_hint=a%00b'), { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toContain('Error code: invalid_request');
  });

  it('a JSON body nested past 32 levels: 400 naming where, whatever the depth', async () => {
    for (const body of [
      '['.repeat(30_000) + ']'.repeat(30_000),
      '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000),
    ]) {
      const response = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(400);
      const { details } = (await response.json()) as { details: { path: string; message: string }[] };
      expect(details[0]!.message).toBe('must not nest deeper than 32 levels');
      expect(details[0]!.path.split('.')).toHaveLength(32);
    }
  });
});
