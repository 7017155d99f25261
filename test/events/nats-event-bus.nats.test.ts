import crypto from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { envelopeOf } from '../../src/events/envelope.js';
import { referenceDataChanged } from '../../src/platform/events/platform-events.js';
import { platformRequest } from '../platform/support/platform-http.js';
import { userToken, userTokenWith } from '../platform/support/platform-tokens.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { eventually } from './support/eventually.js';
import { deleteStream, natsUrl, readStream, uniqueNatsEnvironment } from './support/nats-test-stream.js';
import { freePort } from '../support/free-port.js';
import { natsTarget, startTcpProxy } from './support/tcp-proxy.js';

// Against the real NATS JetStream server: this file runs when NATS_URL is set (CI and this machine have one).
describe('platform events on NATS JetStream', () => {
  const streams: string[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    for (const stream of streams) await deleteStream(stream);
  });

  async function natsService(environment = uniqueNatsEnvironment(), database?: TestService['database']) {
    streams.push(environment.NATS_STREAM, environment.NATS_MANAGEMENT_STREAM);
    const svc = await startTestService({ env: environment, ...(database ? { database } : {}) });
    cleanups.push(() => svc.close());
    return { svc, environment };
  }

  const uniqueKey = () => `nats_${crypto.randomBytes(4).toString('hex')}`;

  it('publishes a change to the stream, with Nats-Msg-Id = messageId and the schema’s envelope', async () => {
    const { svc, environment } = await natsService();
    const admin = await userTokenWith(svc, ['platform.reference-data.manage']);
    const key = uniqueKey();
    const created = await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key, title: { en: 'Topology' } },
    });
    expect(created.status).toBe(201);

    const stored = await eventually(async () => {
      const events = await readStream(environment.NATS_STREAM);
      expect(events).toHaveLength(1);
      return events[0]!;
    });
    expect(stored.subject).toBe(`${environment.NATS_SUBJECT_PREFIX}platform.reference_data.changed`);
    const envelope = envelopeOf('platform.reference_data.changed', referenceDataChanged).parse(stored.body);
    expect(envelope.data).toEqual({ entity: 'subject', key, action: 'created' });
    expect(stored.messageIdHeader).toBe(envelope.messageId);
    // The relay marks the row sent after the broker's ack, so a moment after the message is in the stream.
    await eventually(async () => {
      const row = await svc.service.db('event_outbox').where({ message_id: envelope.messageId }).first();
      expect(row.sent_at).not.toBeNull();
    });
  });

  it('stores a message sent twice (a relay re-sending after a crash) only once', async () => {
    const { svc, environment } = await natsService();
    const admin = await userTokenWith(svc, ['platform.reference-data.manage']);
    await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key: uniqueKey(), title: { en: 'Logic' } },
    });
    const [first] = await eventually(async () => {
      const events = await readStream(environment.NATS_STREAM);
      expect(events).toHaveLength(1);
      return events;
    });
    // The relay died after the broker stored it but before the row was marked sent: it goes again.
    const row = await svc.service.db('event_outbox').orderBy('id', 'desc').first();
    await svc.service.db('event_outbox').where({ id: row.id }).update({ sent_at: null });
    await svc.service.events.relay.drain();
    await svc.service.events.bus.publish(row.envelope);
    const events = await readStream(environment.NATS_STREAM);
    expect(events).toHaveLength(1);
    expect(events[0]!.seq).toBe(first!.seq);
  });

  it('invalidates the cached lists of another node when a change is published', async () => {
    const environment = uniqueNatsEnvironment();
    const { svc: nodeA } = await natsService(environment);
    const { svc: nodeB } = await natsService(environment, nodeA.database);
    const admin = await userTokenWith(nodeA, ['platform.reference-data.manage']);
    const reader = await userToken(nodeB);
    await nodeB.service.platform.ready;

    const before = await platformRequest(nodeB, 'GET', '/reference/levels', { token: reader });
    expect(before.body.items.find((level: { key: string }) => level.key === 'olympiad').title.en).toBe(
      'Olympiad',
    );
    const changed = await platformRequest(nodeA, 'PATCH', '/reference/levels/olympiad', {
      token: admin,
      body: { title: { en: 'Olympiad preparation', ru: 'Олимпиадный' } },
    });
    expect(changed.status).toBe(200);

    await eventually(async () => {
      const after = await platformRequest(nodeB, 'GET', '/reference/levels', {
        token: reader,
        headers: { 'if-none-match': before.headers.get('etag')! },
      });
      expect(after.status).toBe(200);
      expect(after.body.items.find((level: { key: string }) => level.key === 'olympiad').title.en).toBe(
        'Olympiad preparation',
      );
    }, 5000);
  });

  it('starts without the broker; events wait in the outbox and go out once it is reachable', async () => {
    const port = await freePort();
    const environment = uniqueNatsEnvironment(`nats://127.0.0.1:${port}`);
    const { svc } = await natsService(environment);
    let resyncs = 0;
    svc.service.events.bus.onReconnect(() => (resyncs += 1));
    const admin = await userTokenWith(svc, ['platform.reference-data.manage']);
    const key = uniqueKey();
    const created = await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key, title: { en: 'Geometry' } },
    });
    expect(created.status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await svc.service.db('event_outbox').whereNull('sent_at').count({ count: '*' })).toEqual([
      { count: 1 },
    ]);

    const proxy = await startTcpProxy(natsTarget(natsUrl!), port);
    cleanups.push(() => proxy.close());
    const events = await eventually(async () => {
      const stored = await readStream(environment.NATS_STREAM);
      expect(stored).toHaveLength(1);
      return stored;
    }, 20_000);
    expect((events[0]!.body as { data: { key: string } }).data.key).toBe(key);
    // Connected late, as after a reconnect: what other nodes published meanwhile was missed, so caches
    // resync, and the relay publishes without waiting out its back-off.
    await eventually(() => expect(resyncs).toBe(1));
    await eventually(async () =>
      expect(await svc.service.db('event_outbox').whereNull('sent_at').count({ count: '*' })).toEqual([
        { count: 0 },
      ]),
    );
  });

  it('closes the NATS connection on shutdown', async () => {
    const { svc } = await natsService();
    await svc.service.events.bus.subscribe('platform.reference_data.changed', () => {}).ready;
    cleanups.pop();
    await svc.close();
    const row = {
      messageId: crypto.randomUUID(),
      messageType: 'platform.i18n.changed',
      occurredAt: '',
      producer: '',
      data: {},
    };
    await expect(svc.service.events.bus.publish(row)).rejects.toThrow('closed');
  });
});
