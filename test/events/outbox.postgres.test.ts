import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { listenForOutboxCommits } from '../../src/events/outbox/outbox-listener.js';
import { createTestDatabase } from '../support/database.js';
import { eventually } from './support/eventually.js';
import { outboxHelpers } from './support/outbox-helpers.js';
import { RecordingBus } from './support/recording-bus.js';

// PostgreSQL only (this file runs when DATABASE_URL is set): other processes, LISTEN/NOTIFY, a crash.
let database: DatabaseHandle & { url?: string };
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

const { outboxOn, changeWithEvent, relayOn, logger } = outboxHelpers(() => database);

describe('the outbox across processes (PostgreSQL)', () => {
  it('NOTIFY wakes the relay of another node at once', async () => {
    const other = await openDatabase({ databaseUrl: database.url!, poolMax: 2 });
    const bus = new RecordingBus();
    const relay = relayOn(bus, other.db, { pollIntervalMs: 60_000 });
    const listener = await listenForOutboxCommits(other.db, () => relay.wake(), logger);
    try {
      relay.start();
      await relay.drain();
      const started = Date.now();
      // Written on this node, which runs no relay at all.
      const messageId = await changeWithEvent(outboxOn());
      await eventually(() => expect(bus.messageIds).toContain(messageId), 5000);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await listener.close();
      await relay.stop();
      await other.close();
    }
  });

  it('a node killed right after its commits loses none of their events', async () => {
    await relayOn(new RecordingBus()).drain();
    const script = fileURLToPath(new URL('./support/commit-then-crash.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script, database.url!, '3'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    const signal = await new Promise((resolve) =>
      child.on('exit', (_code, exitSignal) => resolve(exitSignal)),
    );
    expect(signal).toBe('SIGKILL');
    expect(output).toContain('committed');

    const pending = await database.db('event_outbox').whereNull('sent_at').orderBy('id').select('envelope');
    expect(pending.map((row) => row.envelope.data.flagKey)).toEqual([
      'crash.flag_0',
      'crash.flag_1',
      'crash.flag_2',
    ]);
    const bus = new RecordingBus();
    await relayOn(bus).drain();
    expect(bus.published.map((entry) => (entry.envelope.data as { flagKey: string }).flagKey)).toEqual([
      'crash.flag_0',
      'crash.flag_1',
      'crash.flag_2',
    ]);
  });
});
