import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';

// A request no route answers: 404, or 405 with Allow when the path takes other methods, in the
// endpoint's own error shape; never Koa's plain-text "Not Found" or "Method Not Allowed".
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const send = (method: string, path: string) => fetch(service.url(path), { method, redirect: 'manual' });

describe('requests no route answers', () => {
  it('a GET to the token endpoint: 405, Allow: POST, RFC 6749 JSON', async () => {
    const response = await send('GET', '/oauth/token');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toMatchObject({
      error: 'invalid_request',
      error_description: '/oauth/token takes POST, not GET.',
    });
  });

  it('a GET to revocation and a POST to discovery: 405 with their methods', async () => {
    const revoke = await send('GET', '/oauth/revoke');
    expect([revoke.status, revoke.headers.get('allow')]).toEqual([405, 'POST']);
    const discovery = await send('POST', '/.well-known/openid-configuration');
    expect(discovery.status).toBe(405);
    expect(discovery.headers.get('allow')).toContain('GET');
    expect(((await discovery.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('a PUT to authorize: 405 with the error page', async () => {
    const response = await send('PUT', '/oauth/authorize');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD, POST');
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toContain('Error code: method_not_allowed');
  });

  it('a GET to client registration: 405 in the JSON API shape', async () => {
    const response = await send('GET', '/oauth/clients/register');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toMatchObject({ error: 'method_not_allowed' });
  });

  it('an unknown page: 404 with the error page', async () => {
    const response = await send('GET', '/en/no-such-page');
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toContain('Error code: not_found');
  });
});
