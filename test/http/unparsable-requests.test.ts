import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';

// Requests Node's HTTP parser refuses before the service sees them: the answer still carries a JSON
// error body that both documented shapes can read (docs/security.md, "Request size limits").
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

/** Sends raw bytes and reads the whole answer until the server closes the connection. */
function sendRaw(bytes: string): Promise<{ status: number; headers: string; body: string }> {
  const { port } = new URL(service.issuer);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(bytes));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body });
    });
  });
}

describe('requests refused by the HTTP parser', () => {
  it('answers an authorize URL over 16 KB with 431 and a JSON error body', async () => {
    const response = await fetch(
      service.url(`/oauth/authorize?client_id=app&response_type=code&state=${'s'.repeat(20_000)}`),
    );
    expect(response.status).toBe(431);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      error: 'request_header_fields_too_large',
      error_description: expect.stringContaining('16 KB'),
      message: expect.stringContaining('16 KB'),
    });
  });

  it('answers an oversized header on a JSON API route the same way', async () => {
    const response = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-filler': 'f'.repeat(17_000) },
      body: '{}',
    });
    expect(response.status).toBe(431);
    expect(((await response.json()) as { error: string }).error).toBe('request_header_fields_too_large');
  });

  it('answers bytes that are not HTTP with 400 invalid_request', async () => {
    const answer = await sendRaw('HELLO THERE\r\n\r\n');
    expect(answer.status).toBe(400);
    expect(answer.headers).toContain('content-type: application/json');
    expect(JSON.parse(answer.body)).toEqual({
      error: 'invalid_request',
      error_description: 'the request is not valid HTTP/1.1',
      message: 'the request is not valid HTTP/1.1',
    });
  });

  it('keeps serving: a request after the refusals gets its normal answer', async () => {
    await sendRaw(`GET /${'x'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\n\r\n`);
    const response = await fetch(service.url('/.well-known/openid-configuration'));
    expect(response.status).toBe(200);
  });
});
