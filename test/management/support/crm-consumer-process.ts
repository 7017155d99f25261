// Child process of the crash tests: the management consumer on NATS JetStream and PostgreSQL, as a node
// runs it. It prints one line per committed batch. CRASH_AFTER_COMMIT=n: it kills itself (SIGKILL)
// right after its n-th batch committed, before the broker's acknowledgement is sent.
import { NatsJetStreamBus } from '../../../adapters/event-bus/nats-jetstream-bus.js';
import { systemClock } from '../../../src/clock.js';
import { openDatabase } from '../../../src/db/database.js';
import { createLogger } from '../../../src/logger.js';
import { CrmConsumer } from '../../../src/management/ingestion/crm-consumer.js';
import { DurableCrmSource } from '../../../src/management/ingestion/durable-crm-source.js';

const environment = process.env as Record<string, string | undefined>;
const logger = createLogger('warn');
const { db } = await openDatabase({ databaseUrl: environment.DATABASE_URL!, poolMax: 4 });
const bus = new NatsJetStreamBus({
  url: environment.NATS_URL!,
  stream: environment.NATS_STREAM!,
  subjectPrefix: environment.NATS_SUBJECT_PREFIX,
  logger,
  name: 'crm-consumer-test',
});
const durable = new DurableCrmSource(bus, {
  stream: environment.NATS_MANAGEMENT_STREAM!,
  durableName: environment.NATS_CRM_CONSUMER!,
  batchSize: Number(environment.BATCH_SIZE ?? 200),
  ackWaitMs: 1500,
});
const crashAfter = Number(environment.CRASH_AFTER_COMMIT ?? 0);
let batches = 0;
const consumer = new CrmConsumer({
  db,
  clock: systemClock,
  logger,
  source: {
    maxDeliveries: durable.maxDeliveries,
    start: (handler) =>
      durable.start(async (batch) => {
        const result = await handler(batch);
        batches += 1;
        process.stdout.write(`committed ${batches} ${batch.length}\n`);
        // Committed, not yet acknowledged: the broker will deliver this batch again.
        if (batches === crashAfter) process.kill(process.pid, 'SIGKILL');
        return result;
      }),
    stop: () => durable.stop(),
  },
});
consumer.start();
process.stdout.write('started\n');
process.on('SIGTERM', async () => {
  await consumer.stop();
  await bus.close();
  await db.destroy();
  process.exit(0);
});
