// Benchmark: publishing lag of platform events, from the commit of a change to NATS JetStream.
// Needs DATABASE_URL (PostgreSQL; a scratch database is created and dropped) and NATS_URL.
// npm run bench:platform
import crypto from 'node:crypto';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import knex from 'knex';
import { NatsJetStreamBus } from '../adapters/event-bus/nats-jetstream-bus.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import type { Envelope } from '../src/events/envelope.js';
import type { EventBus } from '../src/events/event-bus.js';
import { generateRsaPrivateKeyPem } from '../src/keys/development-secrets.js';
import { createLogger } from '../src/logger.js';
import { createEntry } from '../src/platform/reference-data/reference-data-changes.js';
import { createIdentityService } from '../src/service.js';

const databaseUrl = process.env.DATABASE_URL;
const natsUrl = process.env.NATS_URL;
if (!databaseUrl || !natsUrl) {
  console.error('Set DATABASE_URL (PostgreSQL) and NATS_URL (NATS with JetStream).');
  process.exit(2);
}
const sequentialChanges = Number(process.env.BENCH_LAG_CHANGES ?? 300);
const writers = Number(process.env.BENCH_LAG_WRITERS ?? 20);
const changesPerWriter = Number(process.env.BENCH_LAG_CHANGES_PER_WRITER ?? 25);

const id = crypto.randomBytes(4).toString('hex');
const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
const name = `bench_lag_${id}`;
await admin.raw(`create database ${name}`);
const url = new URL(databaseUrl);
url.pathname = `/${name}`;
const logger = createLogger('warn');
const nats = { url: natsUrl, stream: `PLATFORM_EVENTS_BENCH_${id}`, subjectPrefix: `bench_${id}.` };

const commits = new Map<string, number>();
const acks = new Map<string, number>();
// When the relay handed each event to the bus, when the broker acknowledged it, when a subscriber had it.
const calls = new Map<string, number>();
const deliveries = new Map<string, number>();
const waiting = new Map<string, () => void>();

// The service's bus, noting when the broker acknowledged each message.
const brokerBus = new NatsJetStreamBus({ ...nats, logger });
const timedBus: EventBus = {
  publish: async (envelope: Envelope) => {
    calls.set((envelope.data as { key: string }).key, performance.now());
    await brokerBus.publish(envelope);
    acks.set((envelope.data as { key: string }).key, performance.now());
  },
  subscribe: (type, handler) => brokerBus.subscribe(type, handler),
  onReconnect: (handler) => brokerBus.onReconnect(handler),
  close: () => brokerBus.close(),
};
// Another connection, as a domain service would have.
const subscriber = new NatsJetStreamBus({ ...nats, logger, name: 'lag-subscriber' });

const database = await openDatabase({
  databaseUrl: url.toString(),
  poolMax: Number(process.env.BENCH_POOL ?? 20),
});
try {
  await migrateToLatest(database.db);
  const config = loadConfig({ NODE_ENV: 'development', LOG_LEVEL: 'warn', EVENT_BUS: 'nats' });
  const service = await createIdentityService({
    config,
    database,
    logger,
    eventBus: timedBus,
    secrets: {
      oidcPrivateKey: generateRsaPrivateKeyPem(),
      mainAuthPrivateKey: generateRsaPrivateKeyPem(),
      cookieKeys: [crypto.randomBytes(32).toString('hex')],
    },
  });
  await brokerBus.ready(30_000);
  await subscriber.subscribe('platform.reference_data.changed', (envelope) => {
    const key = (envelope.data as { key: string }).key;
    deliveries.set(key, performance.now());
    waiting.get(key)?.();
  }).ready;

  /** One change, committed; `delivered` resolves when the subscriber has its event. */
  const change = async (key: string) => {
    const delivered = new Promise<void>((resolve) => waiting.set(key, resolve));
    await createEntry(service.platform.referenceData.changes, 'subject', {
      key,
      title: { en: key },
      display_order: 0,
      is_active: true,
    });
    commits.set(key, performance.now());
    return { delivered };
  };

  // Warm-up (connections, JIT), not measured.
  for (let index = 0; index < 20; index += 1) await (await change(`warmup_${index}`)).delivered;
  commits.clear();
  acks.clear();
  deliveries.clear();

  const sequentialKeys = Array.from({ length: sequentialChanges }, (_, index) => `sequential_${index}`);
  for (const key of sequentialKeys) await (await change(key)).delivered;

  const concurrentKeys = Array.from({ length: writers }, (_, writer) =>
    Array.from({ length: changesPerWriter }, (__, index) => `concurrent_${writer}_${index}`),
  );
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  const started = performance.now();
  // Each writer commits its changes one after the other without waiting for their events.
  await Promise.all(
    concurrentKeys.map(async (keys) => {
      const delivered = [];
      for (const key of keys) delivered.push((await change(key)).delivered);
      await Promise.all(delivered);
    }),
  );
  const concurrentSeconds = (performance.now() - started) / 1000;
  loopDelay.disable();

  const report = (label: string, keys: string[]) => {
    const toBroker = keys.map((key) => acks.get(key)! - commits.get(key)!);
    const toSubscriber = keys.map((key) => deliveries.get(key)! - commits.get(key)!);
    return [
      { run: label, path: 'commit → broker ack', ...percentiles(toBroker) },
      {
        run: label,
        path: 'commit → relay sends it',
        ...percentiles(keys.map((key) => calls.get(key)! - commits.get(key)!)),
      },
      { run: label, path: 'commit → subscriber', ...percentiles(toSubscriber) },
    ];
  };
  console.log(
    `\n${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, load ${os
      .loadavg()
      .map((load) => load.toFixed(1))
      .join(
        ' ',
      )}; PostgreSQL + NATS JetStream on this machine; event-loop delay during the concurrent run: p50 ${(
      loopDelay.percentile(50) / 1e6
    ).toFixed(1)} ms, p99 ${(loopDelay.percentile(99) / 1e6).toFixed(1)} ms`,
  );
  console.table([
    ...report(`sequential, ${sequentialChanges} changes`, sequentialKeys),
    ...report(
      `${writers} writers × ${changesPerWriter} (${Math.round((writers * changesPerWriter) / concurrentSeconds)} changes/s)`,
      concurrentKeys.flat(),
    ),
  ]);
  await service.close();
} finally {
  await subscriber.close();
  await database.close();
  await admin.raw(`drop database if exists ${name} with (force)`);
  await admin.destroy();
  await deleteBenchStream();
}

function percentiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
  return { 'p50 ms': at(50).toFixed(1), 'p99 ms': at(99).toFixed(1), 'max ms': at(100).toFixed(1) };
}

async function deleteBenchStream() {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const connection = await connect({ servers: natsUrl! });
  await (await jetstreamManager(connection)).streams.delete(nats.stream).catch(() => false);
  await connection.close();
}
