import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/http/http-server.js';
import { startTestService, type TestService } from '../support/test-service.js';

// A request line and headers over 16 KB get 431 in the endpoint's own error shape; what Node's parser
// refuses itself (over 64 KB, bytes that are not HTTP) still gets a JSON error body, never an empty one
// (docs/security.md, "Answers under failure").
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

const longAuthorizeUrl = (stateLength: number) =>
  service.url(`/oauth/authorize?client_id=app&response_type=code&state=${'s'.repeat(stateLength)}`);

describe('a request line and headers over 16 KB', () => {
  it('at authorize (a browser’s URL): 431 with the error page', async () => {
    const response = await fetch(longAuthorizeUrl(20_000));
    expect(response.status).toBe(431);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toContain('Error code: request_header_fields_too_large');
  });

  it('at the token endpoint: 431 with RFC 6749 JSON', async () => {
    const response = await fetch(service.url('/oauth/token'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-filler': 'f'.repeat(17_000) },
      body: 'grant_type=client_credentials',
    });
    expect(response.status).toBe(431);
    expect(await response.json()).toMatchObject({
      error: 'invalid_request',
      error_description: 'The request line and headers must not exceed 16 KB together.',
    });
  });

  it('on a JSON API: 431 with its error body', async () => {
    const response = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-filler': 'f'.repeat(17_000) },
      body: '{}',
    });
    expect(response.status).toBe(431);
    expect(await response.json()).toMatchObject({
      error: 'request_header_fields_too_large',
      message: 'The request line and headers must not exceed 16 KB together.',
    });
  });
});

describe('requests Node’s parser refuses', () => {
  it('over 64 KB: 431 with RFC 6749 JSON (authorize is where such URLs come from)', async () => {
    const authorize = await fetch(longAuthorizeUrl(70_000));
    expect(authorize.status).toBe(431);
    expect(await authorize.json()).toEqual({
      error: 'request_header_fields_too_large',
      error_description: 'The request line and headers must not exceed 16 KB together.',
    });
  });

  it('bytes that are not HTTP: 400 invalid_request, and the service keeps serving', async () => {
    const answer = await sendRaw('HELLO THERE\r\n\r\n');
    expect(answer.status).toBe(400);
    expect(answer.headers).toContain('content-type: application/json');
    expect(JSON.parse(answer.body)).toEqual({
      error: 'invalid_request',
      error_description: 'The request is not valid HTTP/1.1.',
    });
    const response = await fetch(service.url('/.well-known/openid-configuration'));
    expect(response.status).toBe(200);
  });
});

describe('connections of one address (the server facing clients directly)', () => {
  it('holds at most its bound of them: a client holding that many can’t take every descriptor', async () => {
    // ~20,000 connections sending a few bytes of a head each took every file descriptor of the process.
    const server = createHttpServer((_request, response) => response.end('ok'), '', {
      connectionsPerAddress: 3,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const unfinishedHead = () =>
      new Promise<net.Socket>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
          resolve(socket);
        });
      });
    /** The first bytes a new connection gets, or '' when the server closes it without answering. */
    const answerToNewConnection = () =>
      new Promise<string>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () =>
          socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'),
        );
        let answer = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk) => {
          answer += chunk;
          socket.end();
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve(answer));
      });
    const held = [await unfinishedHead(), await unfinishedHead(), await unfinishedHead()];
    try {
      expect(await answerToNewConnection()).toBe('');
      const closed = new Promise((resolve) => held[0]!.once('close', resolve));
      held[0]!.destroy();
      await closed;
      // The server hears of the close a moment later.
      let answer = '';
      for (let attempt = 0; attempt < 20 && !answer; attempt++) answer = await answerToNewConnection();
      expect(answer).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      for (const socket of held) socket.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('connections of every address together', () => {
  it('a newcomer at the bound takes the place of the oldest connection serving no request', async () => {
    // 1,024 connections per address, each sending a few bytes of a head, from twenty addresses (an
    // IPv6 host has every /64 of its /48) took every descriptor of a process allowed 20,000.
    let answerSlow: (() => void) | undefined;
    const server = createHttpServer(
      (request, response) => {
        if (request.url === '/slow') answerSlow = () => response.end('slow');
        else response.end('ok');
      },
      '',
      { connectionsInAll: 4 },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const connectFrom = (address: string, bytes: string) =>
      new Promise<net.Socket>((resolve) => {
        const socket = net.connect({ port, host: '127.0.0.1', localAddress: address }, () => {
          socket.write(bytes);
          resolve(socket);
        });
        socket.on('error', () => {});
      });
    const answerOf = (socket: net.Socket) =>
      new Promise<string>((resolve) => {
        let answer = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk) => (answer += chunk));
        socket.on('close', () => resolve(answer));
      });
    const closed = (socket: net.Socket) => new Promise((resolve) => socket.once('close', resolve));
    // The oldest connection is being answered; three others from three addresses send heads that never end.
    const busy = await connectFrom('127.0.0.2', 'GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const busyAnswer = answerOf(busy);
    for (let wait = 0; wait < 50 && !answerSlow; wait++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const held = [
      await connectFrom('127.0.0.3', 'GET / HTTP/1.1\r\nHost: x\r\n'),
      await connectFrom('127.0.0.4', 'GET / HTTP/1.1\r\nHost: x\r\n'),
      await connectFrom('127.0.0.5', 'GET / HTTP/1.1\r\nHost: x\r\n'),
    ];
    try {
      const firstHeldClosed = closed(held[0]!);
      const newcomer = await connectFrom(
        '127.0.0.6',
        'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(await answerOf(newcomer)).toMatch(/^HTTP\/1\.1 200[^]*ok$/);
      await firstHeldClosed;
      expect(held[1]!.destroyed || held[2]!.destroyed).toBe(false);
      // The request being answered was not cut.
      answerSlow!();
      expect(await busyAnswer).toMatch(/slow$/);
    } finally {
      busy.destroy();
      for (const socket of held) socket.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
