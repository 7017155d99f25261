import crypto from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveAvatar } from '../../src/identity/users/avatars.js';
import { createServiceClient, createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const oneMegabyteJson = JSON.stringify({ flow: 'login', padding: 'x'.repeat(1024 * 1024) });
const largeForm = new URLSearchParams({ token: 'x', padding: 'x'.repeat(100 * 1024) }).toString();

function post(path: string, contentType: string, body: string, headers: Record<string, string> = {}) {
  return fetch(service.url(path), {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body,
  });
}

async function expectApiTooLarge(response: Response): Promise<void> {
  expect(response.status).toBe(413);
  expect(await response.json()).toEqual({
    error: 'payload_too_large',
    message: expect.any(String),
    request_id: response.headers.get('x-request-id'),
  });
}

async function expectOAuthTooLarge(response: Response): Promise<void> {
  expect(response.status).toBe(413);
  expect(await response.json()).toEqual({
    error: 'invalid_request',
    error_description: expect.stringContaining('too large'),
    request_id: response.headers.get('x-request-id'),
  });
}

async function expectPageTooLarge(response: Response): Promise<void> {
  expect(response.status).toBe(413);
  expect(response.headers.get('content-type')).toContain('text/html');
  expect(await response.text()).toContain('payload_too_large');
}

describe('request bodies over the limit answer 413', () => {
  it('our JSON APIs: 413 payload_too_large, for every router of them', async () => {
    await expectApiTooLarge(
      await post('/api/v2/identity/auth/flow/start', 'application/json', oneMegabyteJson),
    );
    await expectApiTooLarge(
      await post('/api/v2/platform/reference/subjects', 'application/json', oneMegabyteJson),
    );
    await expectApiTooLarge(await post('/oauth/clients/register', 'application/json', oneMegabyteJson));
  });

  it('a JSON body just within the limit is parsed, and malformed JSON stays 400 invalid_json', async () => {
    const withinLimit = JSON.stringify({ flow: 'login', padding: 'x'.repeat(60 * 1024) });
    const parsed = await post('/api/v2/identity/auth/flow/start', 'application/json', withinLimit);
    expect(parsed.status).not.toBe(413);
    const malformed = await post('/api/v2/identity/auth/flow/start', 'application/json', '{"flow":');
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: string }).error).toBe('invalid_json');
  });

  it('the OAuth endpoints (ours and the engine’s): 413 with the RFC 6749 error body', async () => {
    const { client, clientSecret } = await createServiceClient(service.service.db, [
      'service:crm.aggregates.read',
    ]);
    const basic = {
      authorization: `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}`,
    };
    const form = 'application/x-www-form-urlencoded';
    await expectOAuthTooLarge(await post('/oauth/introspect', form, largeForm, basic));
    await expectOAuthTooLarge(await post('/oauth/userinfo', form, largeForm));
    await expectOAuthTooLarge(await post('/oauth/token', form, largeForm, basic));
    await expectOAuthTooLarge(await post('/oauth/revoke', form, largeForm, basic));
  });

  it('the pages’ forms: 413 on the error page', async () => {
    const form = 'application/x-www-form-urlencoded';
    const html = { accept: 'text/html' };
    await expectPageTooLarge(await post('/en/reset-password/request', form, largeForm, html));
    await expectPageTooLarge(await post('/en/auth/step', form, largeForm, html));
    await expectPageTooLarge(await post('/oauth/end_session/confirm', form, largeForm, html));
  });
});

describe('requests held at once', () => {
  let held: TestService;
  beforeAll(async () => {
    held = await startTestService({
      env: { TRUST_PROXY: '1' },
      settings: { requestsInFlight: { total: 6, perAddress: 3 } },
    });
  });
  afterAll(() => held?.close());

  type HeldSocket = net.Socket & { received: () => string };

  /**
   * Requests whose bodies never finish, from `address` (the trusted proxy's X-Forwarded-For), sent
   * one after the other, each once the server has taken the one before: `Expect: 100-continue` makes
   * Node answer `100 Continue` in the tick it hands a request to the service, which admits it (or
   * refuses it) in that same tick. A check sent before then would race the held requests for places.
   */
  async function unfinishedBodies(address: string, count: number): Promise<HeldSocket[]> {
    const { port } = new URL(held.issuer);
    const sockets: HeldSocket[] = [];
    for (let index = 0; index < count; index++) {
      const socket = net.connect(Number(port), '127.0.0.1');
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('error', () => {});
      socket.write(
        'POST /api/v2/identity/auth/flow/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          `Content-Length: 60000\r\nExpect: 100-continue\r\nX-Forwarded-For: ${address}\r\n\r\n`,
      );
      await expect.poll(() => received, { timeout: 10_000 }).toMatch(/^HTTP\/1\.1 100 /);
      socket.write('{"flow":"login","x":"');
      sockets.push(Object.assign(socket, { received: () => received }));
    }
    return sockets;
  }

  const start = (address: string) =>
    fetch(held.url('/api/v2/identity/auth/flow/config'), { headers: { 'x-forwarded-for': address } });

  /** The status `address` gets once the held requests have arrived (they are read asynchronously). */
  async function settledStatus(address: string, expected: number): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const response = await start(address);
      if (response.status === expected || attempt === 40) return response;
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('answers 503 over its address’s share, without reading the body; others go on', async () => {
    // Thousands of such requests from one client filled the 160 MB heap and the process died.
    const sockets = await unfinishedBodies('203.0.113.1', 3);
    try {
      const refused = await settledStatus('203.0.113.1', 503);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('connection')).toBe('close');
      expect(await refused.json()).toMatchObject({ error: 'service_unavailable' });
      const token = await fetch(held.url('/oauth/token'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '203.0.113.1' },
        body: 'grant_type=client_credentials',
      });
      expect(token.status).toBe(503);
      expect(await token.json()).toMatchObject({ error: 'temporarily_unavailable' });
      expect((await start('203.0.113.2')).status).toBe(200);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    // A request that ends, however it ends, gives its place back.
    expect((await settledStatus('203.0.113.1', 200)).status).toBe(200);
  });

  it('counts an IPv6 client by its /64: another address of it is the same client', async () => {
    // A host takes any address of its /64 at will: per address, its share had no end.
    const sockets = [
      ...(await unfinishedBodies('2001:db8:5:6::1', 1)),
      ...(await unfinishedBodies('2001:db8:5:6::2', 1)),
      ...(await unfinishedBodies('2001:db8:5:6:0:0:0:3', 1)),
    ];
    try {
      expect((await settledStatus('2001:db8:5:6:abcd::4', 503)).status).toBe(503);
      expect((await start('2001:db8:5:7::1')).status).toBe(200);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    expect((await settledStatus('2001:db8:5:6::4', 200)).status).toBe(200);
  });

  it('a few addresses holding every place with unfinished bodies keep nobody else out', async () => {
    // Two addresses (of 512 places, 128 each: four) held the whole bound, and every other client got
    // 503 for as long as they dripped their bodies (Node waits 300 s for a request to arrive).
    const first = await unfinishedBodies('203.0.113.11', 3);
    expect((await settledStatus('203.0.113.11', 503)).status).toBe(503);
    const second = await unfinishedBodies('203.0.113.12', 3);
    const sockets = [...first, ...second];
    try {
      expect((await settledStatus('203.0.113.12', 503)).status).toBe(503);
      // The bound is reached: a newcomer takes the place of a request still waiting for its body,
      // which is answered 408 and closed.
      const served = await start('203.0.113.13');
      expect(served.status).toBe(200);
      await expect.poll(() => first.filter((socket) => socket.destroyed).length).toBe(1);
      const evicted = first.find((socket) => socket.destroyed)!;
      expect(evicted.received()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 408 /);
      expect(evicted.received()).toContain('"error":"request_timeout"');
      expect(second.every((socket) => !socket.destroyed)).toBe(true);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('a few addresses whose answers are never read keep nobody else out', async () => {
    // Node has no timeout for sending an answer: a client that never reads what it asked for (a
    // photo of 2 MB, public; over a network, anything larger than the TCP buffers on the way, such as
    // a page's script) held the request's place, with its answer, as long as it kept the connection
    // open. Four addresses (of 512 places, 128 each) held every place, and everyone else got 503.
    const user = await createTestUser(held.service.db);
    const picture = await saveAvatar(
      held.service.db,
      user.id,
      { bytes: crypto.randomBytes(2 * 1000 * 1000), contentType: 'image/png' },
      held.issuer,
      new Date(),
    );
    const request = (address: string) =>
      `GET ${new URL(picture).pathname} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: ${address}\r\n\r\n`;
    const { port } = new URL(held.issuer);
    const sockets: net.Socket[] = [];
    try {
      // Three connections from each of two addresses ask for the photo again and again, one request
      // at a time, reading nothing: once the loopback buffers are full (a few MB), the answer being
      // sent stays there, holding its place, and the connection's next request is not even read.
      await Promise.all(
        ['203.0.113.31', '203.0.113.32'].flatMap((address) =>
          [1, 2, 3].map(async () => {
            const socket = net.connect(Number(port), '127.0.0.1');
            socket.on('error', () => {});
            socket.pause();
            sockets.push(socket);
            for (let sent = 0; sent < 5; sent++) {
              socket.write(request(address));
              await new Promise((resolve) => setTimeout(resolve, 150));
            }
          }),
        ),
      );
      // The bound is reached: a newcomer takes the place of an answer waiting for its client to read
      // it, whose connection is closed.
      const served = await start('203.0.113.40');
      expect(served.status).toBe(200);
      await served.arrayBuffer();
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
