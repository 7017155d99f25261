import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe('JSON APIs', () => {
  it('serves the identity OpenAPI 3.1 document', async () => {
    const response = await fetch(service.url('/api/v2/identity/openapi.json'));
    expect(response.status).toBe(200);
    const document = (await response.json()) as {
      openapi: string;
      servers: { url: string }[];
      components: { schemas: Record<string, unknown> };
    };
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers[0]?.url).toBe(`${service.issuer}/api/v2/identity`);
    expect(document.components.schemas.Error).toBeDefined();
  });

  it('refuses a body that is not JSON with 415, and takes the same body sent as JSON', async () => {
    const body = JSON.stringify({ flow: 'login' });
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
      const response = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
        method: 'POST',
        headers: { 'content-type': contentType },
        body,
      });
      expect(response.status, contentType).toBe(415);
      expect(await response.json()).toEqual({
        error: 'unsupported_media_type',
        message: 'Send the request body as JSON (Content-Type: application/json).',
        request_id: response.headers.get('x-request-id'),
      });
    }
    const json = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body,
    });
    expect(json.status).toBe(200);
    // A POST without a body (Content-Length: 0, no type) is not refused for its type.
    const bare = await fetch(service.url('/api/v2/identity/auth/flow/start'), { method: 'POST' });
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('answers an unknown API path with the JSON error body, not an HTML page', async () => {
    const response = await fetch(service.url('/api/v2/identity/nope'), { method: 'POST' });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: 'not_found',
      message: 'There is no such endpoint.',
      request_id: response.headers.get('x-request-id'),
    });
  });
});
