import http from 'node:http';
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

  it('TRACE and PROPFIND (methods no route has): 405 or 404 in the endpoint’s shape, never a plain 501', async () => {
    // fetch refuses to send TRACE: a raw request, as any client can send it.
    const raw = (method: string, path: string) =>
      new Promise<{ status: number; type: string; allow: string | undefined; body: string }>(
        (resolve, reject) => {
          const request = http.request(service.url(path), { method }, (response) => {
            let body = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (body += chunk));
            response.on('end', () =>
              resolve({
                status: response.statusCode!,
                type: String(response.headers['content-type']),
                allow: response.headers.allow,
                body,
              }),
            );
          });
          request.on('error', reject);
          request.end();
        },
      );
    const userinfo = await raw('TRACE', '/oauth/userinfo');
    expect([userinfo.status, userinfo.allow]).toEqual([405, expect.stringContaining('GET')]);
    expect(JSON.parse(userinfo.body)).toMatchObject({ error: 'invalid_request' });
    const flow = await raw('PROPFIND', '/api/v2/identity/auth/flow/start');
    expect([flow.status, flow.allow]).toEqual([405, expect.stringContaining('POST')]);
    expect(JSON.parse(flow.body)).toMatchObject({ error: 'method_not_allowed' });
    const page = await raw('TRACE', '/en/auth');
    expect(page.status).toBe(405);
    expect(page.type).toContain('text/html');
    const health = await raw('TRACE', '/healthz');
    expect(health.status).toBe(405);
    expect(health.body).not.toBe('Not Implemented');
  });

  it('another spelling of an API path (paths are case-sensitive): 404, not the route without its guards', async () => {
    // The route matched without case while its router's JSON error body and body parser did not run.
    for (const [method, path] of [
      ['POST', '/OAUTH/CLIENTS/REGISTER'],
      ['GET', '/API/V2/identity/auth/me'],
      ['GET', '/Api/v2/admin/oauth-clients'],
    ] as const) {
      const response = await send(method, path);
      expect(response.status, path).toBe(404);
    }
    expect((await send('POST', '/oauth/clients/register')).status).toBe(401);
  });

  it('an unknown page: 404 with the error page', async () => {
    const response = await send('GET', '/en/no-such-page');
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toContain('Error code: not_found');
  });

  it('an unknown page whose path names another site: its language links stay on this service', async () => {
    // https://idp.example//evil.example/sign-in is a path of ours; written into a link it is another site.
    for (const path of ['//evil.example/sign-in', '/%2F/evil.example', '//evil.example/en/auth']) {
      const response = await send('GET', path);
      expect(response.status).toBe(404);
      const links = [...(await response.text()).matchAll(/<a href="([^"]*)" hreflang/g)].map((m) => m[1]!);
      expect(links.length).toBeGreaterThan(1);
      for (const link of links) {
        const resolved = new URL(link.replace(/&amp;/g, '&'), service.url(path));
        expect(resolved.origin).toBe(new URL(service.issuer).origin);
        expect(resolved.pathname).toBe(new URL(service.url(path)).pathname);
      }
    }
  });
});
