import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import type { EventBus } from '../event-bus.js';
import {
  type PendingEvent,
  lockRelayAndFindPending,
  markEventsSent,
  pruneSentEvents,
  recordPublishFailure,
} from './outbox-repository.js';

export interface OutboxRelayOptions {
  db: Database;
  bus: EventBus;
  logger: Logger;
  clock: Clock;
  batchSize?: number;
  /** Fallback when no wake-up arrives (a NOTIFY lost with its connection, a write from another tool). */
  pollIntervalMs?: number;
  /**
   * After the broker refused an event, its key's events wait this long, doubling at each refusal up to
   * `maxRetryDelayMs`; so does the whole relay while the broker is unreachable or the database failed it.
   */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Sent rows are kept this long (a trail for debugging), then pruned. */
  retentionMs?: number;
}

interface BatchResult {
  locked: boolean;
  published: number;
  failed: boolean;
  /** A publish failed while the bus was not connected: the broker is away, not refusing one event. */
  brokerAway?: boolean;
  /** The batch was as large as allowed: more may be pending. */
  full?: boolean;
}

const pruneEveryMs = 60 * 60 * 1000;

/**
 * Publishes the outbox: pending rows in id order, each marked sent once the bus accepted it. The batch
 * runs in a transaction holding an advisory lock, so with several nodes only one relay publishes at a
 * time. Order is kept per ordering key (what the event is about): changes of one key take its row lock
 * before they write their event, so their ids follow commit order, and the relay publishes a key's
 * events one after the other, each after the broker acknowledged the one before. Different keys go
 * out concurrently (one round trip per batch, not per event). An event the connected broker refused
 * holds back the later events of its key only; they are retried with a growing delay, and meanwhile left
 * out of the batches, so an event the broker keeps refusing (too large for it, say) delays no other key's
 * events, and its own key's fill no batch. While the broker is unreachable the whole relay waits
 * instead, and then publishes in id order: every key would fail alike, and keys retried each on its own
 * delay would come back out of commit order.
 */
export class OutboxRelay {
  readonly #options: Required<Omit<OutboxRelayOptions, 'db' | 'bus' | 'logger' | 'clock'>>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #wakeRequested = false;
  #stopped = true;
  #retryDelayMs: number;
  #retryAt = 0;
  #lastPruneAt = 0;

  constructor(private readonly deps: OutboxRelayOptions) {
    this.#options = {
      batchSize: deps.batchSize ?? 100,
      pollIntervalMs: deps.pollIntervalMs ?? 1000,
      retryDelayMs: deps.retryDelayMs ?? 250,
      maxRetryDelayMs: deps.maxRetryDelayMs ?? 30_000,
      retentionMs: deps.retentionMs ?? 7 * 24 * 60 * 60 * 1000,
    };
    this.#retryDelayMs = this.#options.retryDelayMs;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#timer = setInterval(() => this.wake(), this.#options.pollIntervalMs);
    this.#timer.unref();
    this.wake();
  }

  /** Publish what is pending now (called right after a commit, and on NOTIFY from other nodes). */
  wake(): void {
    if (this.#stopped) return;
    this.#wakeRequested = true;
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
    });
  }

  /** The broker is reachable again: publish now rather than after the rest of the back-off. */
  resume(): void {
    this.#retryAt = 0;
    this.#retryDelayMs = this.#options.retryDelayMs;
    this.wake();
  }

  /** Stops the relay; resolves when a batch in flight has finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running;
  }

  /** Publishes until nothing is pending (or a publish fails); returns how many were published. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const batch = await this.#publishBatch();
      total += batch.published;
      if (!batch.locked || batch.failed || !batch.full) return total;
    }
  }

  async #run(): Promise<void> {
    while (this.#wakeRequested && !this.#stopped) {
      this.#wakeRequested = false;
      if (this.deps.clock.now().getTime() < this.#retryAt) return;
      try {
        let batch: BatchResult;
        do {
          batch = await this.#publishBatch();
        } while (!this.#stopped && batch.locked && !batch.failed && batch.full);
        // Unless it came back meanwhile (its reconnect asked for another run, which the wait would lose).
        if (batch.brokerAway && this.deps.bus.connected?.() === false) {
          this.#backOff();
          return;
        }
        this.#retryDelayMs = this.#options.retryDelayMs;
        await this.#pruneNowAndThen();
      } catch (error) {
        // The database failed the relay, not the broker an event: the whole relay waits.
        this.deps.logger.error({ err: error }, 'outbox relay failed');
        this.#backOff();
      }
    }
  }

  /**
   * How long a key waits after its event's `attempts`-th refusal by a connected broker (failures during
   * an outage are not counted): doubling, up to the maximum.
   */
  #retryDelayAfter(attempts: number): number {
    const { retryDelayMs, maxRetryDelayMs } = this.#options;
    return Math.min(retryDelayMs * 2 ** Math.min(attempts - 1, 30), maxRetryDelayMs);
  }

  #backOff(): void {
    this.#retryAt = this.deps.clock.now().getTime() + this.#retryDelayMs;
    this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, this.#options.maxRetryDelayMs);
  }

  async #publishBatch(): Promise<BatchResult> {
    const { db, bus, logger, clock } = this.deps;
    return db.transaction(async (trx) => {
      const now = clock.now();
      const { locked, events: pending } = await lockRelayAndFindPending(trx, this.#options.batchSize, now);
      if (!locked) return { locked: false, published: 0, failed: false };
      const connectedBefore = bus.connected?.() !== false;
      const outcomes = await Promise.all(chainsByKey(pending).map((chain) => publishChain(bus, chain)));
      const sent = outcomes.flatMap((outcome) => outcome.sent);
      const failures = outcomes.flatMap((outcome) => (outcome.failure ? [outcome.failure] : []));
      const failed = failures.length > 0;
      // Away when the publishes were sent or when they failed: one sent during an outage may fail only
      // after the reconnect, and is no refusal of its event.
      const brokerAway = failed && (!connectedBefore || bus.connected?.() === false);
      for (const { event, error } of failures) {
        logger.warn(
          { messageId: event.envelope.messageId, refusals: event.attempts + (brokerAway ? 0 : 1), error },
          'publishing an event failed; it stays in the outbox and is retried',
        );
        await recordPublishFailure(
          trx,
          event.id,
          brokerAway
            ? { kind: 'broker away', error }
            : {
                kind: 'refused',
                error,
                keyWaitsUntil: new Date(now.getTime() + this.#retryDelayAfter(event.attempts + 1)),
              },
        );
      }
      await markEventsSent(trx, sent, clock.now());
      return {
        locked: true,
        published: sent.length,
        failed,
        brokerAway,
        full: pending.length === this.#options.batchSize,
      };
    });
  }

  async #pruneNowAndThen(): Promise<void> {
    if (this.deps.clock.now().getTime() - this.#lastPruneAt < pruneEveryMs) return;
    this.#lastPruneAt = this.deps.clock.now().getTime();
    const before = new Date(this.deps.clock.now().getTime() - this.#options.retentionMs);
    await pruneSentEvents(this.deps.db, before);
  }
}

interface ChainOutcome {
  sent: number[];
  failure?: { event: PendingEvent; error: string };
}

/** The batch split by ordering key, each chain in id order. */
function chainsByKey(pending: PendingEvent[]): PendingEvent[][] {
  const chains = new Map<string, PendingEvent[]>();
  for (const event of pending) {
    const chain = chains.get(event.orderingKey);
    if (chain) chain.push(event);
    else chains.set(event.orderingKey, [event]);
  }
  return [...chains.values()];
}

/** Publishes one key's events in order, stopping at the first failure. */
async function publishChain(bus: EventBus, chain: PendingEvent[]): Promise<ChainOutcome> {
  const sent: number[] = [];
  for (const event of chain) {
    try {
      await bus.publish(event.envelope);
      sent.push(event.id);
    } catch (error) {
      return { sent, failure: { event, error: error instanceof Error ? error.message : String(error) } };
    }
  }
  return { sent };
}
