import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { envelopeSchema } from '../../src/events/envelope.js';
import { createTestDatabase, onPostgres } from '../support/database.js';
import { eventually } from './support/eventually.js';
import { outboxHelpers } from './support/outbox-helpers.js';
import { RecordingBus } from './support/recording-bus.js';

let database: DatabaseHandle & { url?: string };

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

const { outboxOn, changeWithEvent, twoChangesOfOneFlag, relayOn, pendingIds } = outboxHelpers(() => database);

describe('the outbox', () => {
  it('stores the event with the change; the relay publishes it once, in the envelope, and marks it sent', async () => {
    const messageId = await changeWithEvent(outboxOn());
    const row = await database.db('event_outbox').where({ message_id: messageId }).first();
    expect(row.sent_at).toBeNull();

    const bus = new RecordingBus();
    await relayOn(bus).drain();
    expect(bus.messageIds).toContain(messageId);
    const published = bus.published.find((entry) => entry.envelope.messageId === messageId)!.envelope;
    expect(envelopeSchema.parse(published)).toEqual(published);
    expect(published).toMatchObject({ messageType: 'platform.feature_flag.changed', producer: 'platform' });
    expect(
      (await database.db('event_outbox').where({ message_id: messageId }).first()).sent_at,
    ).not.toBeNull();

    await relayOn(bus).drain();
    expect(bus.messageIds.filter((id) => id === messageId)).toHaveLength(1);
  });

  it('keeps no event of a change that failed', async () => {
    const before = await database.db('event_outbox').count({ count: '*' });
    await expect(
      outboxOn().transaction(async (trx, emit) => {
        await emit(
          'platform.feature_flag.changed',
          { flagKey: 'doomed', action: 'created', version: 1 },
          'doomed',
        );
        await trx('platform_feature_flags').insert({ key: 'doomed', version: 1 });
        throw new Error('the change failed after its event was added');
      }),
    ).rejects.toThrow('the change failed');
    expect(await database.db('event_outbox').count({ count: '*' })).toEqual(before);
    expect(await database.db('platform_feature_flags').where({ key: 'doomed' }).first()).toBeUndefined();
  });

  it('refuses a payload that does not match its message type schema, storing nothing', async () => {
    const before = await database.db('event_outbox').count({ count: '*' });
    await expect(
      outboxOn().transaction(async (_trx, emit) => {
        await emit(
          'platform.feature_flag.changed',
          { flagKey: 'x', action: 'renamed', version: 1 } as never,
          'x',
        );
      }),
    ).rejects.toThrow();
    expect(await database.db('event_outbox').count({ count: '*' })).toEqual(before);
  });

  it('loses no committed event when the node stops before publishing: the next relay publishes them in order', async () => {
    const written: string[] = [];
    for (let index = 0; index < 5; index += 1) written.push(await changeWithEvent(outboxOn()));
    // No relay ran (the node that committed them is gone); a node starting later publishes them.
    const bus = new RecordingBus();
    const relay = relayOn(bus);
    relay.start();
    await eventually(() => expect(bus.messageIds).toEqual(expect.arrayContaining(written)));
    await relay.stop();
    const positions = written.map((id) => bus.messageIds.indexOf(id));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('keeps an event the broker refused pending and retries it; later events of its key wait, others go', async () => {
    const bus = new RecordingBus();
    const relay = relayOn(bus, database.db, { pollIntervalMs: 50 });
    await relay.drain();
    const outbox = outboxOn();
    const flagKey = `retried.flag_${process.pid}`;
    // Two changes of one flag (one ordering key), then a change of another flag.
    const [first, second] = await twoChangesOfOneFlag(outbox, flagKey);
    const other = await changeWithEvent(outbox);

    bus.failNext = 1;
    relay.start();
    await eventually(() => expect(bus.messageIds).toHaveLength(3));
    await relay.stop();
    // The first publish was refused: the other key's event was not held back, the flag's second waited.
    expect(bus.messageIds).toEqual([other, first, second]);
    const refused = await database.db('event_outbox').where({ message_id: first }).first();
    expect(refused).toMatchObject({ attempts: 1, last_error: null });
    expect(refused.sent_at).not.toBeNull();
    expect(await pendingIds()).toEqual([]);
  });

  it('an event the broker keeps refusing holds back its own key only, not the relay', async () => {
    const bus = new RecordingBus();
    // One retry waits 1.5 s; two events make a batch, as many as the refused key has pending.
    const relay = relayOn(bus, database.db, { pollIntervalMs: 50, retryDelayMs: 1500, batchSize: 2 });
    await relay.drain();
    const outbox = outboxOn(database.db, () => relay.wake());
    const flagKey = `refused.flag_${process.pid}`;
    const [refused, after] = await twoChangesOfOneFlag(outbox, flagKey);
    bus.refusedMessageIds.add(refused);
    relay.start();
    await eventually(() => expect(bus.attempts).toBe(1));

    // Another key's event, committed while the refused one waits for its retry, goes out at once.
    const committed = Date.now();
    const other = await changeWithEvent(outbox);
    await eventually(() => expect(bus.messageIds).toEqual([other]));
    expect(Date.now() - committed).toBeLessThan(1000);
    expect(bus.attempts).toBe(2);

    // Taken by the broker at its retry, then the event of its key that waited behind it.
    bus.refusedMessageIds.clear();
    await eventually(() => expect(bus.messageIds).toEqual([other, refused, after]), 5000);
    await relay.stop();
    expect(await pendingIds()).toEqual([]);
  });

  it('keeps events pending while the broker is down and publishes them in commit order when it is back', async () => {
    const bus = new RecordingBus();
    const relay = relayOn(bus, database.db, { pollIntervalMs: 50 });
    await relay.drain();
    bus.away = true;
    const outbox = outboxOn(database.db, () => relay.wake());
    relay.start();
    const written: string[] = [];
    // Events of four keys, each committed after the relay has failed the ones before: keys retried each
    // on its own delay would come back in the order of their delays, not of their commits.
    for (let index = 0; index < 4; index += 1) {
      const attempts = bus.attempts;
      written.push(await changeWithEvent(outbox));
      await eventually(() => expect(bus.attempts).toBeGreaterThan(attempts));
    }
    await eventually(() => expect(bus.attempts).toBeGreaterThan(8));
    expect(await pendingIds()).toEqual(expect.arrayContaining(written));
    const waitingOfTheirOwn = await database
      .db('event_outbox')
      .whereIn('message_id', written)
      .whereNotNull('next_attempt_at');
    expect(waitingOfTheirOwn).toEqual([]);
    bus.away = false;
    await eventually(() => expect(bus.messageIds).toEqual(written));
  });

  it('publishes at once when the broker reconnects, not after the rest of its back-off', async () => {
    const bus = new RecordingBus();
    const relay = relayOn(bus, database.db, { pollIntervalMs: 50, retryDelayMs: 60_000 });
    await relay.drain();
    bus.away = true;
    relay.start();
    const messageId = await changeWithEvent(outboxOn(database.db, () => relay.wake()));
    await eventually(() => expect(bus.attempts).toBe(1));
    // Back only once the failed batch has committed and the relay, the broker still away, has backed
    // off (it does right as its commit returns; 50 ms covers that answer): back before, the relay
    // carries on by itself (the next test's case).
    await eventually(async () =>
      expect(
        (await database.db('event_outbox').where({ message_id: messageId }).first()).last_error,
      ).toBeTruthy(),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    bus.away = false;
    // A minute's back-off: without the reconnect the event would wait it out.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bus.messageIds).toEqual([]);
    relay.resume();
    await eventually(() => expect(bus.messageIds).toEqual([messageId]), 2000);
  });

  it('publishes at once when the broker reconnects while a publish sent during the outage is in flight', async () => {
    const bus = new RecordingBus();
    const relay = relayOn(bus, database.db, { pollIntervalMs: 50, retryDelayMs: 60_000 });
    await relay.drain();
    let answer!: () => void;
    bus.inFlight = new Promise((resolve) => (answer = resolve));
    bus.away = true;
    relay.start();
    const messageId = await changeWithEvent(outboxOn(database.db, () => relay.wake()));
    await eventually(() => expect(bus.attempts).toBe(1));
    // The broker is back before the publish sent while it was away has failed.
    bus.away = false;
    bus.inFlight = undefined;
    relay.resume();
    answer();
    // Neither the relay's back-off nor a wait of the event's own (a minute each) holds it back.
    await eventually(() => expect(bus.messageIds).toEqual([messageId]), 2000);
  });

  it('counts no failure of an outage as a refusal: one refused right after it waits the first step', async () => {
    const bus = new RecordingBus();
    // A refusal's wait is 300 ms doubling: reckoned from the outage's failures too, it would be minutes.
    const relay = relayOn(bus, database.db, {
      pollIntervalMs: 20,
      retryDelayMs: 300,
      maxRetryDelayMs: 600_000,
    });
    await relay.drain();
    bus.away = true;
    relay.start();
    const messageId = await changeWithEvent(outboxOn(database.db, () => relay.wake()));
    for (let failure = 0; failure < 8; failure += 1) {
      const attempts = bus.attempts;
      await eventually(() => expect(bus.attempts).toBeGreaterThan(attempts));
      relay.resume(); // the relay's own back-off would make eight tries take a minute
    }
    const duringOutage = await database.db('event_outbox').where({ message_id: messageId }).first();
    expect(duringOutage).toMatchObject({ attempts: 0, next_attempt_at: null, sent_at: null });
    expect(duringOutage.last_error).toContain('unreachable');

    // Back, but it refuses this event once: a first refusal, so one first step of waiting.
    bus.failNext = 1;
    bus.away = false;
    relay.resume();
    const refusedAt = Date.now();
    await eventually(() => expect(bus.messageIds).toEqual([messageId]), 5000);
    expect(Date.now() - refusedAt).toBeLessThan(3000);
    const published = await database.db('event_outbox').where({ message_id: messageId }).first();
    expect(published.attempts).toBe(1);
  });

  it('wakes the relay right after the commit, without waiting for the poll', async () => {
    const bus = new RecordingBus();
    const relay = relayOn(bus, database.db, { pollIntervalMs: 60_000 });
    relay.start();
    await relay.drain();
    const started = Date.now();
    const messageId = await changeWithEvent(outboxOn(database.db, () => relay.wake()));
    await eventually(() => expect(bus.messageIds).toContain(messageId), 5000);
    expect(Date.now() - started).toBeLessThan(2000);
    await relay.stop();
  });
});

describe('the outbox with several nodes', () => {
  it('two relays publish each event exactly once, each writer’s events in order', async () => {
    // A second node: its own connection pool on PostgreSQL; PGlite (one process) shares its one connection.
    const other = onPostgres
      ? await openDatabase({ databaseUrl: database.url!, poolMax: 5 })
      : { db: database.db, close: async () => {} };
    try {
      await relayOn(new RecordingBus()).drain();
      const [busA, busB] = [new RecordingBus(), new RecordingBus()];
      const [relayA, relayB] = [relayOn(busA), relayOn(busB, other.db)];
      relayA.start();
      relayB.start();
      // Writers on both nodes, each waking its own relay after commit.
      const byWriter = await Promise.all(
        Array.from({ length: 6 }, async (_, writer) => {
          const node =
            writer % 2 === 0 ? { db: database.db, relay: relayA } : { db: other.db, relay: relayB };
          const ids = [];
          for (let index = 0; index < 15; index += 1) {
            ids.push(await changeWithEvent(outboxOn(node.db, () => node.relay.wake())));
          }
          return ids;
        }),
      );
      const written = byWriter.flat();
      const all = () => [...busA.published, ...busB.published].sort((x, y) => (x.at < y.at ? -1 : 1));
      await eventually(() => expect(all()).toHaveLength(written.length), 20_000);
      await Promise.all([relayA.stop(), relayB.stop()]);

      const published = all().map((entry) => entry.envelope.messageId);
      expect(new Set(published).size).toBe(written.length);
      expect(new Set(published)).toEqual(new Set(written));
      // One relay at a time, in outbox order: the events of each writer (one key's changes) stay in order.
      for (const ids of byWriter) {
        const positions = ids.map((id) => published.indexOf(id));
        expect(positions).toEqual([...positions].sort((a, b) => a - b));
      }
      expect(await pendingIds()).toEqual([]);
    } finally {
      await other.close();
    }
  });
});
