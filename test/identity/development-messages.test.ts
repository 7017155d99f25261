import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * This machine's first address that is not loopback: a request to it arrives from that address, as a
 * request from another machine would (a test machine has one: CI's containers, a laptop's network).
 */
function externalAddress(): string {
  const address = Object.values(os.networkInterfaces())
    .flat()
    .find((candidate) => candidate && !candidate.internal && candidate.family === 'IPv4');
  if (!address) throw new Error('this test needs a network interface other than loopback');
  return address.address;
}

/** The service's app also listening on every address, as the default HOST did. */
async function listenEverywhere(service: TestService): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer(service.service.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function outbox(origin: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${origin}/api/v2/identity/dev/messages`, { headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const secretCode = '493817';

async function withMessage(service: TestService) {
  await service.service.developmentMessages.send({
    channel: 'email',
    to: 'someone@example.com',
    subject: 'Your code',
    text: `Your code is ${secretCode}`,
    code: secretCode,
    purpose: 'reset_password',
  });
}

describe('GET /api/v2/identity/dev/messages (the development outbox)', () => {
  let service: TestService;
  let everywhere: Awaited<ReturnType<typeof listenEverywhere>>;
  beforeAll(async () => {
    service = await startTestService();
    everywhere = await listenEverywhere(service);
    await withMessage(service);
  });
  afterAll(async () => {
    await everywhere?.close();
    await service?.close();
  });

  it('answers a request from this machine (loopback)', async () => {
    const answer = await outbox(`http://127.0.0.1:${everywhere.port}`);
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body)).toContain(secretCode);
  });

  it('is not there for a request from another address: 404, nothing of the messages', async () => {
    const answer = await outbox(`http://${externalAddress()}:${everywhere.port}`);
    expect(answer).toEqual({
      status: 404,
      body: { error: 'not_found', message: expect.any(String), request_id: expect.any(String) },
    });
  });

  it('believes no forwarding header: a claimed loopback client from elsewhere gets 404', async () => {
    const answer = await outbox(`http://${externalAddress()}:${everywhere.port}`, {
      'x-forwarded-for': '127.0.0.1',
      forwarded: 'for=127.0.0.1',
    });
    expect(answer.status).toBe(404);
  });

  it('refuses a request relayed by a proxy on this machine (it carries a forwarding header)', async () => {
    const answer = await outbox(`http://127.0.0.1:${everywhere.port}`, {
      'x-forwarded-for': '198.51.100.7',
    });
    expect(answer.status).toBe(404);
    expect(JSON.stringify(answer.body)).not.toContain(secretCode);
  });
});

describe('the development outbox with DEV_MESSAGES_REMOTE=true', () => {
  let service: TestService;
  let everywhere: Awaited<ReturnType<typeof listenEverywhere>>;
  beforeAll(async () => {
    service = await startTestService({ env: { DEV_MESSAGES_REMOTE: 'true' } });
    everywhere = await listenEverywhere(service);
    await withMessage(service);
  });
  afterAll(async () => {
    await everywhere?.close();
    await service?.close();
  });

  it('answers a request from another address (an explicit opt-in, e.g. a development VM)', async () => {
    const answer = await outbox(`http://${externalAddress()}:${everywhere.port}`);
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body)).toContain(secretCode);
  });
});
