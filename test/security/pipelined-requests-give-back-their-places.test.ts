import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The bound on requests held at once (src/http/requests-in-flight.ts) gives a request's place back when
 * its answer is sent or its connection closes. A client pipelining requests on one connection (HTTP/1.1
 * allows it) had those behind an answer that closes the connection (the 503 over its address's share)
 * admitted as places freed, their answers queued behind that one: the connection closed before they
 * were written, and Node never told those answers it had closed. Their places were never given back:
 * a burst of pipelined requests took all but one place of its address's share for good: any two
 * requests at once from that address (everyone behind the same NAT, or the same IPv6 /64) got 503
 * until the process restarted.
 */

const perAddress = 128;
let service: TestService;
beforeAll(async () => {
  service = await startTestService({ settings: { requestsInFlight: { perAddress, total: 512 } } });
});
afterAll(() => service?.close());

const get = (path: string, close = false) =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;

/** Writes `text` on one connection; answers the status codes read until the server closes it. */
function pipeline(text: string): Promise<number[]> {
  const { port } = new URL(service.issuer);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let answers = '';
    socket.on('data', (chunk: Buffer) => (answers += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () =>
      resolve([...answers.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))),
    );
    socket.setTimeout(20_000, () => socket.destroy());
    socket.write(text);
  });
}

describe('requests pipelined past the share of their address', () => {
  it('give their places back when the connection closes', async () => {
    for (let burst = 0; burst < 3; burst++) {
      const statuses = await pipeline(get('/healthz').repeat(3000) + get('/healthz', true));
      // Over the share: 503, and the connection closes after it.
      expect(statuses).toContain(503);
    }
    // The address's whole share is there again: as many requests held at once as it allows (pipelined
    // on one connection, so that the server holds them all at the same time) are all answered. The
    // server sees the closes within moments (longer on a busy machine); places never given back fail
    // every try.
    let statuses: number[] = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
      statuses = await pipeline(get('/healthz').repeat(perAddress - 1) + get('/healthz', true));
      if (statuses.length === perAddress && statuses.every((status) => status === 200)) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(statuses).toEqual(Array.from({ length: perAddress }, () => 200));
  });
});
