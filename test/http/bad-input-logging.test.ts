import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warningBurstMs } from '../../src/throttled-warnings.js';
import { createServiceClient } from '../support/fixtures.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { ManualClock } from '../support/manual-clock.js';
import { startTestService, type TestService } from '../support/test-service.js';

/** What the service logs, one parsed JSON object per line. */
const lines: Record<string, unknown>[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
    done();
  },
});

let service: TestService;
const clock = new ManualClock();
beforeAll(async () => {
  service = await startTestService({
    env: { TRUST_PROXY: 'true' },
    clock,
    logger: pino({ level: 'info' }, logStream),
  });
});
afterAll(() => service?.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** The requests of the probe's burst: client_ids no client can have, on every OAuth endpoint. */
function badRequest(index: number): Promise<Response> {
  const tooLong = 'x'.repeat(300 + index);
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  switch (index % 3) {
    case 0:
      return fetch(service.url(`/oauth/authorize?client_id=${tooLong}&response_type=code`));
    case 1:
      return fetch(service.url('/oauth/token'), {
        method: 'POST',
        headers: { ...form, authorization: basic(tooLong, 'secret') },
        body: 'grant_type=client_credentials',
      });
    default:
      return fetch(service.url('/oauth/introspect'), {
        method: 'POST',
        headers: form,
        body: `client_id=${tooLong}&token=abc`,
      });
  }
}

async function burst(size: number, send: (index: number) => Promise<Response>): Promise<number[]> {
  return Promise.all(
    Array.from({ length: size }, async (_, index) => {
      const response = await send(index);
      await response.arrayBuffer();
      return response.status;
    }),
  );
}

const linesOfKind = (kind: string) => lines.filter((line) => line.kind === kind);

describe('logs of expected bad input', () => {
  it('a burst of refused client_ids writes one warning line, no stack; the next burst says how many were not written', async () => {
    lines.length = 0;
    const statuses = await burst(90, badRequest);
    expect(statuses.every((status) => status === 400 || status === 401)).toBe(true);
    // Nothing at error level, no stack anywhere: this is the callers' mistake, not ours.
    expect(lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
    expect(lines.filter((line) => JSON.stringify(line).includes('stack'))).toEqual([]);
    expect(linesOfKind('invalid_client_id')).toHaveLength(1);
    expect(linesOfKind('invalid_client_id')[0]).toMatchObject({ level: 40, length: expect.any(Number) });

    await burst(30, badRequest);
    expect(linesOfKind('invalid_client_id')).toHaveLength(1);

    clock.advance(warningBurstMs + 1);
    await burst(1, badRequest);
    const [, next] = linesOfKind('invalid_client_id');
    expect(next).toMatchObject({ suppressed: 89 + 30 });
  });

  it('a flood of wrong client secrets is refused with 429 and logged once per burst', async () => {
    lines.length = 0;
    const { client } = await createServiceClient(service.service.db, ['service:crm.aggregates.read']);
    const ip = uniqueIp();
    const statuses = await burst(60, () =>
      fetch(service.url('/oauth/token'), {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic(client.clientId, 'wrong'),
          'x-forwarded-for': ip,
        },
        body: 'grant_type=client_credentials',
      }),
    );
    expect(statuses.filter((status) => status === 401)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(40);
    expect(linesOfKind('oauth_unproven_requests_limited')).toHaveLength(1);
    expect(linesOfKind('oauth_unproven_requests_limited')[0]).toMatchObject({
      clientId: client.clientId,
      ip,
    });
    expect(lines.filter((line) => JSON.stringify(line).includes('stack'))).toEqual([]);
  });

  it('bodies cut off by the client: one warning line, no stack, whatever the endpoint', async () => {
    lines.length = 0;
    const { port } = new URL(service.issuer);
    // Content-Length promises 100 bytes; 9 arrive, then the connection closes.
    const cutOff = (path: string) =>
      new Promise<void>((resolve) => {
        const socket = net.connect(Number(port), '127.0.0.1', () => {
          socket.write(
            `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntoken=abc`,
          );
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 50);
        });
        socket.on('error', () => resolve());
      });
    for (let index = 0; index < 20; index++) {
      await cutOff(
        ['/oauth/introspect', '/oauth/token', '/api/v2/identity/auth/flow/start', '/oauth/userinfo'][
          index % 4
        ]!,
      );
    }
    // The service finished with each before this answers.
    expect((await fetch(service.url('/healthz'))).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
    expect(lines.filter((line) => JSON.stringify(line).includes('stack'))).toEqual([]);
    expect(linesOfKind('client_closed_request').length).toBeLessThanOrEqual(1);
    // Nor is it taken for the database going away.
    expect(lines.filter((line) => String(line.msg).includes('database unavailable'))).toEqual([]);
  });
});
