// Benchmark: crm events ingested per second with exactly-once effects, from NATS JetStream into
// PostgreSQL through the management consumer (durable consumer, batches, one transaction each).
// Needs DATABASE_URL (a scratch database is created and dropped) and NATS_URL.
// npm run bench:crm   (BENCH_CRM_DAYS, BENCH_CRM_LEADS_PER_DAY, BENCH_CRM_COPIES, BENCH_CRM_BATCH)
import crypto from 'node:crypto';
import os from 'node:os';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import knex from 'knex';
import { NatsJetStreamBus } from '../adapters/event-bus/nats-jetstream-bus.js';
import { systemClock } from '../src/clock.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createLogger } from '../src/logger.js';
import { chaoticDelivery } from '../src/management/crm-simulator/crm-delivery.js';
import { CrmState } from '../src/management/crm-simulator/crm-state.js';
import { generateCrmHistory } from '../src/management/crm-simulator/crm-world.js';
import { consumerBalance, consumerSales } from '../src/management/dashboards/consumer-figures.js';
import { CrmConsumer } from '../src/management/ingestion/crm-consumer.js';
import {
  DurableCrmSource,
  managementStreamSubjects,
} from '../src/management/ingestion/durable-crm-source.js';
import { ManagementMetrics } from '../src/management/management-metrics.js';

const databaseUrl = process.env.DATABASE_URL;
const natsUrl = process.env.NATS_URL;
if (!databaseUrl || !natsUrl) {
  console.error('Set DATABASE_URL (PostgreSQL) and NATS_URL (NATS with JetStream).');
  process.exit(2);
}
const days = Number(process.env.BENCH_CRM_DAYS ?? 365);
const leadsPerDay = Number(process.env.BENCH_CRM_LEADS_PER_DAY ?? 30);
const copies = Number(process.env.BENCH_CRM_COPIES ?? 2);
const batchSize = Number(process.env.BENCH_CRM_BATCH ?? 500);

const id = crypto.randomBytes(4).toString('hex');
const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
const name = `bench_crm_${id}`;
await admin.raw(`create database ${name}`);
const url = new URL(databaseUrl);
url.pathname = `/${name}`;
const logger = createLogger('warn');
const stream = `MANAGEMENT_EVENTS_BENCH_${id}`;
const subjectPrefix = `bench_${id}.`;
const database = await openDatabase({ databaseUrl: url.toString(), poolMax: 4 });
const bus = new NatsJetStreamBus({ url: natsUrl, stream: `UNUSED_${id}`, subjectPrefix, logger });

try {
  await migrateToLatest(database.db);
  const history = generateCrmHistory({ seed: 2026, start: '2025-01-01', days, leadsPerDay });
  const delivery = chaoticDelivery(history, {
    seed: 2027,
    copies,
    shuffle: true,
    unknownStatuses: 20,
    missingIds: 20,
  });
  await bus.ensureStream(
    stream,
    managementStreamSubjects.map((subject) => bus.subjectOf(subject)),
  );
  let started = performance.now();
  for (let start = 0; start < delivery.texts.length; start += 1000) {
    await Promise.all(
      delivery.texts
        .slice(start, start + 1000)
        .map((text) => bus.publishMessage(JSON.parse(text).messageType ?? 'crm.unknown', text)),
    );
  }
  const publishSeconds = (performance.now() - started) / 1000;
  console.log(
    `published ${delivery.texts.length} messages (${history.length} distinct events × ${copies}, shuffled, ` +
      `+ poison) in ${publishSeconds.toFixed(1)} s`,
  );

  const source = new DurableCrmSource(bus, { stream, durableName: 'management', batchSize });
  const metrics = new ManagementMetrics(database.db);
  const consumer = new CrmConsumer({ db: database.db, clock: systemClock, logger, source, metrics });
  const cpuBefore = process.cpuUsage();
  started = performance.now();
  consumer.start();
  const connection = await connect({ servers: natsUrl });
  const manager = await jetstreamManager(connection);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const info = await manager.consumers.info(stream, 'management').catch(() => undefined);
    if (
      info &&
      info.num_pending + info.num_ack_pending === 0 &&
      info.delivered.stream_seq >= delivery.texts.length
    )
      break;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await consumer.stop();
  await connection.close();

  // Exactly once: the totals are crm's, to the minor unit.
  const truth = new CrmState();
  for (const envelope of history) truth.apply(envelope);
  const period = { from: '2025-01-01', to: '2026-01-01' };
  const strip = ({ generatedAt: _g, asOf: _a, ...rest }: Record<string, unknown>) => rest;
  const sameSales =
    JSON.stringify(strip(await consumerSales(database.db, period, new Date()))) ===
    JSON.stringify(strip(truth.sales(period, new Date())));
  const sameBalance =
    JSON.stringify(strip(await consumerBalance(database.db, new Date()))) ===
    JSON.stringify(strip(truth.balance(new Date())));
  const { rows } = await database.db.raw('select count(*)::int as count from crm_events');
  const histogram = await metrics.registry.getSingleMetricAsString('management_crm_batch_seconds');
  const batches = Number(/management_crm_batch_seconds_count (\d+)/.exec(histogram)?.[1]);
  const batchSeconds = Number(/management_crm_batch_seconds_sum ([\d.]+)/.exec(histogram)?.[1]);
  console.log(
    JSON.stringify(
      {
        machine: `${os.cpus().length} × ${os.cpus()[0]?.model}`,
        messages: delivery.texts.length,
        distinctEvents: history.length,
        stored: rows[0].count,
        batchSize,
        batches,
        averageBatch: Math.round(delivery.texts.length / batches),
        secondsInBatchTransactions: Number(batchSeconds.toFixed(2)),
        seconds: Number(seconds.toFixed(2)),
        messagesPerSecond: Math.round(delivery.texts.length / seconds),
        distinctEventsPerSecond: Math.round(history.length / seconds),
        consumerCpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
        totalsEqualGroundTruth: sameSales && sameBalance && rows[0].count === history.length,
      },
      null,
      2,
    ),
  );
} finally {
  const connection = await connect({ servers: natsUrl });
  await (await jetstreamManager(connection)).streams.delete(stream).catch(() => false);
  await connection.close();
  await bus.close();
  await database.close();
  await admin.raw(`drop database if exists ${name} with (force)`);
  await admin.destroy();
}
