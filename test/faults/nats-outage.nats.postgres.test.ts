import crypto from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformRequest } from '../platform/support/platform-http.js';
import { userTokenWith } from '../platform/support/platform-tokens.js';
import { uniqueNatsEnvironment } from '../events/support/nats-test-stream.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { OwnNats } from './support/own-nats.js';

// NATS stopped under writes, then started again. The broker is a nats-server of this test's own (the
// shared one is never stopped). The outage lasts FAULT_NATS_OUTAGE_SECONDS (the minute: 60; the
// suite's default: 5). Meanwhile the writes succeed and the outbox holds their events; afterwards the
// subscriber has each exactly once; /readyz says not ready while the broker is away.
const outageMs = Number(process.env.FAULT_NATS_OUTAGE_SECONDS ?? 5) * 1_000;

let nats: OwnNats;
let service: TestService;
let admin: string;
let environment: ReturnType<typeof uniqueNatsEnvironment>;

beforeAll(async () => {
  nats = await OwnNats.create();
  environment = uniqueNatsEnvironment(nats.url);
  service = await startTestService({ env: environment });
  admin = await userTokenWith(service, ['platform.reference-data.manage']);
});
afterAll(async () => {
  await service?.close();
  await nats?.destroy();
});

const readiness = async () => {
  const response = await fetch(service.url('/readyz'));
  const text = await response.text();
  return {
    status: response.status,
    body: (text.startsWith('{') ? JSON.parse(text) : {}) as { checks?: Record<string, string> },
  };
};

/** Every created key the stream holds, with how many times, read as a subscriber reads after the outage. */
async function keysInStream(): Promise<{ keys: Map<string, number>; messageIds: string[] }> {
  const connection = await connect({ servers: nats.url });
  try {
    const manager = await jetstreamManager(connection);
    const info = await manager.streams.info(environment.NATS_STREAM);
    const keys = new Map<string, number>();
    const messageIds: string[] = [];
    for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
      const message = await manager.streams.getMessage(environment.NATS_STREAM, { seq });
      if (!message) continue;
      const envelope = message.json<{ messageId: string; data: { key: string; action: string } }>();
      messageIds.push(envelope.messageId);
      if (envelope.data.action === 'created')
        keys.set(envelope.data.key, (keys.get(envelope.data.key) ?? 0) + 1);
    }
    return { keys, messageIds };
  } finally {
    await connection.close();
  }
}

describe('NATS stopped under writes', () => {
  it('the outbox holds every event while the broker is away; afterwards each arrives exactly once', async () => {
    expect((await readiness()).status).toBe(200);
    const created: string[] = [];
    let writing = true;
    const writes = (async () => {
      while (writing) {
        const key = `outage_${crypto.randomBytes(4).toString('hex')}`;
        const response = await platformRequest(service, 'POST', '/reference/subjects', {
          token: admin,
          body: { key, title: { en: 'Written during a broker outage' } },
        });
        expect(response.status, JSON.stringify(response.body)).toBe(201);
        created.push(key);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await nats.stop();
    const writtenBeforeOutage = created.length;

    // Not ready while the broker is away; the writes go on, their events wait in the outbox.
    await expect.poll(async () => (await readiness()).status, { timeout: 5_000, interval: 100 }).toBe(503);
    expect((await readiness()).body.checks?.eventBus).not.toBe('ok');
    await new Promise((resolve) => setTimeout(resolve, outageMs));
    expect(created.length).toBeGreaterThan(writtenBeforeOutage);
    const waiting = await service.service.db('event_outbox').whereNull('sent_at').count({ count: '*' });
    expect(Number(waiting[0]!.count)).toBeGreaterThan(0);

    await nats.start();
    await new Promise((resolve) => setTimeout(resolve, 500));
    writing = false;
    await writes;

    await expect.poll(async () => (await readiness()).status, { timeout: 15_000, interval: 200 }).toBe(200);
    await expect
      .poll(
        async () =>
          Number(
            (await service.service.db('event_outbox').whereNull('sent_at').count({ count: '*' }))[0]!.count,
          ),
        // Drained soon after the reconnect, not after the rest of the relay's back-off (up to 30 s).
        { timeout: 5_000, interval: 200 },
      )
      .toBe(0);
    const { keys, messageIds } = await keysInStream();
    expect(new Set(messageIds).size).toBe(messageIds.length);
    for (const key of created) expect(keys.get(key), key).toBe(1);
    expect(keys.size).toBe(created.length);
  }, 120_000);
});
