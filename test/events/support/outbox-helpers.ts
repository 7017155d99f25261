import { onTestFinished } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import type { DatabaseHandle } from '../../../src/db/database.js';
import { OutboxRelay, type OutboxRelayOptions } from '../../../src/events/outbox/outbox-relay.js';
import { Outbox } from '../../../src/events/outbox/outbox.js';
import { createLogger } from '../../../src/logger.js';
import { platformEvents } from '../../../src/platform/events/platform-events.js';
import { onPostgres } from '../../support/database.js';
import type { RecordingBus } from './recording-bus.js';

const logger = createLogger('silent');
let flagCounter = 0;

/** Outboxes, relays and a sample change with its event, on a test file's database. */
export function outboxHelpers(database: () => DatabaseHandle) {
  function outboxOn(db = database().db, afterCommit: () => void = () => {}) {
    return new Outbox({
      db,
      catalog: platformEvents,
      producer: 'platform',
      clock: systemClock,
      notifyOnCommit: onPostgres,
      afterCommit,
    });
  }

  /** One change (a feature flag row) and its event, in one transaction; returns the messageId. */
  async function changeWithEvent(outbox: Outbox<typeof platformEvents>): Promise<string> {
    const flagKey = `outbox.flag_${process.pid}_${(flagCounter += 1)}`;
    return outbox.transaction(async (trx, emit) => {
      await trx('platform_feature_flags').insert({ key: flagKey, version: 1 });
      const envelope = await emit(
        'platform.feature_flag.changed',
        { flagKey, action: 'created', version: 1 },
        flagKey,
      );
      return envelope.messageId;
    });
  }

  /** Two changes of one flag, one ordering key (created, then updated); returns their messageIds. */
  async function twoChangesOfOneFlag(
    outbox: Outbox<typeof platformEvents>,
    flagKey: string,
  ): Promise<[string, string]> {
    const created = await outbox.transaction(async (trx, emit) => {
      await trx('platform_feature_flags').insert({ key: flagKey, version: 1 });
      return (
        await emit('platform.feature_flag.changed', { flagKey, action: 'created', version: 1 }, flagKey)
      ).messageId;
    });
    const updated = await outbox.transaction(async (trx, emit) => {
      await trx('platform_feature_flags').where({ key: flagKey }).update({ enabled: true, version: 2 });
      return (
        await emit('platform.feature_flag.changed', { flagKey, action: 'updated', version: 2 }, flagKey)
      ).messageId;
    });
    return [created, updated];
  }

  /** A relay on `db`, stopped when the test ends, even a failed one (else it takes later tests' events). */
  function relayOn(
    bus: RecordingBus,
    db = database().db,
    options: Pick<
      OutboxRelayOptions,
      'pollIntervalMs' | 'retryDelayMs' | 'maxRetryDelayMs' | 'batchSize'
    > = {},
  ) {
    const relay = new OutboxRelay({ db, bus, logger, clock: systemClock, retryDelayMs: 20, ...options });
    onTestFinished(() => relay.stop());
    return relay;
  }

  const pendingIds = async () =>
    (await database().db('event_outbox').whereNull('sent_at').select('message_id')).map(
      (row) => row.message_id,
    );

  return { outboxOn, changeWithEvent, twoChangesOfOneFlag, relayOn, pendingIds, logger };
}
