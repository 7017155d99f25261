import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, ListenError } from '../../src/operations/listen.js';

let taken: http.Server;
beforeAll(async () => {
  taken = http.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

describe('listen', () => {
  it('explains a port already in use in one line (what to change, no stack)', async () => {
    const { port } = taken.address() as AddressInfo;
    const failed = await listen(http.createServer(), port, '127.0.0.1').catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ListenError);
    expect((failed as Error).message).toBe(
      `127.0.0.1:${port} is already in use (another process listens there; set PORT or HOST)`,
    );
  });

  it('resolves once listening', async () => {
    const server = http.createServer((_request, response) => response.end('up'));
    await listen(server, 0, '127.0.0.1');
    const { port } = server.address() as AddressInfo;
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('up');
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
