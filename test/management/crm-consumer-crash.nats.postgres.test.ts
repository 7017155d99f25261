import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/database.js';
import { chaoticDelivery } from '../../src/management/crm-simulator/crm-delivery.js';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { listDeadLetters } from '../../src/management/ingestion/dead-letters.js';
import { deleteStream, natsUrl } from '../events/support/nats-test-stream.js';
import { createTestDatabase } from '../support/database.js';
import { repositoryRoot } from '../support/run-process.js';
import { figuresOf, groundTruth, storedTotals, totalsRebuiltFromRecords } from './support/crm-fixtures.js';
import { crmNatsEnvironment, crmPublisher, drained } from './support/crm-nats.js';

// Real NATS JetStream and real PostgreSQL: consumers in child processes, killed with SIGKILL.
const script = fileURLToPath(new URL('./support/crm-consumer-process.ts', import.meta.url));
let database: DatabaseHandle & { url?: string };
const streams: string[] = [];
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
  for (const stream of streams) await deleteStream(stream);
});

type Environment = ReturnType<typeof crmNatsEnvironment>;

interface Consumer {
  child: ChildProcess;
  /** Resolves with the number of batches it has committed once it printed `count` of them. */
  committed(count: number): Promise<void>;
  exited: Promise<NodeJS.Signals | null>;
}

function startConsumer(environment: Environment, extra: Record<string, string> = {}): Consumer {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: repositoryRoot,
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: database.url!,
      ...environment,
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let batches = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    batches += chunk
      .toString()
      .split('\n')
      .filter((line) => line.startsWith('committed')).length;
    for (const wait of waiting.filter((entry) => batches >= entry.count)) {
      waiting.splice(waiting.indexOf(wait), 1);
      wait.resolve();
    }
  });
  return {
    child,
    committed: (count) =>
      batches >= count ? Promise.resolve() : new Promise((resolve) => waiting.push({ count, resolve })),
    exited: new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal))),
  };
}

/** How many deliveries the durable consumer made in all (first ones and redeliveries). */
async function deliveries(environment: Environment): Promise<number> {
  const connection = await connect({ servers: natsUrl! });
  try {
    const manager = await jetstreamManager(connection);
    return (await manager.consumers.info(environment.NATS_MANAGEMENT_STREAM, environment.NATS_CRM_CONSUMER))
      .delivered.consumer_seq;
  } finally {
    await connection.close();
  }
}

async function resetDatabase() {
  await database.db.raw(
    'truncate crm_events, crm_records, crm_daily_totals, crm_all_time_totals, crm_dead_letters',
  );
}

async function expectGroundTruth(history: ReturnType<typeof generateCrmHistory>, deadLetterIds: string[]) {
  const periods = [
    { from: '2026-03-01', to: '2026-04-01' },
    { from: '2026-03-10', to: '2026-03-25' },
  ];
  const { consumer, crm } = await figuresOf(database.db, groundTruth(history), periods, ['2026-03']);
  expect(consumer).toEqual(crm);
  const { rows } = await database.db.raw('select count(*)::int as count from crm_events');
  expect(rows[0].count).toBe(history.length);
  expect((await listDeadLetters(database.db)).map((letter) => letter.messageId).sort()).toEqual(
    [...deadLetterIds].sort(),
  );
  expect(await storedTotals(database.db)).toEqual(await totalsRebuiltFromRecords(database.db));
}

describe('crashes of the consumer (NATS JetStream + PostgreSQL)', { timeout: 120_000 }, () => {
  it('a crash after a batch committed but before its ack: redelivered, applied once', async () => {
    await resetDatabase();
    const environment = crmNatsEnvironment();
    streams.push(environment.NATS_MANAGEMENT_STREAM);
    const history = generateCrmHistory({ seed: 51, start: '2026-03-01', days: 31, leadsPerDay: 12 });
    const delivery = chaoticDelivery(history, {
      seed: 52,
      copies: 3,
      shuffle: true,
      unknownStatuses: 2,
      missingIds: 2,
    });
    const publisher = await crmPublisher(environment);
    await publisher.publish(delivery.texts);
    await publisher.close();

    const crashing = startConsumer(environment, { CRASH_AFTER_COMMIT: '2' });
    expect(await crashing.exited).toBe('SIGKILL');
    const { rows } = await database.db.raw('select count(*)::int as count from crm_events');
    expect(rows[0].count).toBeGreaterThan(0);

    const next = startConsumer(environment);
    await drained(environment);
    next.child.kill('SIGTERM');
    await next.exited;
    // The committed-but-unacknowledged batch (and what was fetched after it) came again.
    expect(await deliveries(environment)).toBeGreaterThanOrEqual(delivery.texts.length + 200);
    await expectGroundTruth(history, delivery.deadLetterIds);
  });

  it('consumers killed with kill -9 mid-stream, three times: the totals are the ground truth exactly', async () => {
    await resetDatabase();
    const environment = crmNatsEnvironment();
    streams.push(environment.NATS_MANAGEMENT_STREAM);
    const history = generateCrmHistory({ seed: 61, start: '2026-03-01', days: 31, leadsPerDay: 15 });
    const delivery = chaoticDelivery(history, {
      seed: 62,
      copies: 3,
      shuffle: true,
      unknownStatuses: 3,
      missingIds: 3,
      paymentPii: 1,
      malformed: 1,
    });
    const publisher = await crmPublisher(environment);
    await publisher.publish(delivery.texts);
    await publisher.close();

    for (const afterBatches of [2, 5, 3]) {
      const consumer = startConsumer(environment, { BATCH_SIZE: '150' });
      await consumer.committed(afterBatches);
      // Somewhere in its next batch: fetched, maybe applying, not acknowledged.
      consumer.child.kill('SIGKILL');
      expect(await consumer.exited).toBe('SIGKILL');
    }
    const last = startConsumer(environment);
    await drained(environment);
    last.child.kill('SIGTERM');
    await last.exited;
    await expectGroundTruth(history, delivery.deadLetterIds);
  });
});
