import type { DurableBatchHandler, DurableDelivery } from '../../events/durable-event-source.js';
import type { EventSource, EventSubscription } from '../../events/event-bus.js';
import type { Logger } from '../../logger.js';
import type { CrmEventSource } from './crm-consumer.js';

/**
 * crm events from the embedded bus (EVENT_BUS unset: the zero-setup default, where crm, e.g. the
 * simulator, runs in the same process). Messages are queued as they arrive and handed out in batches of
 * what is waiting; a failed one is handed out again after a delay, as a broker would. Nothing survives
 * the process: that is what NATS JetStream is for.
 */
export class InProcessCrmSource implements CrmEventSource {
  readonly maxDeliveries: number;
  readonly #queue: DurableDelivery[] = [];
  readonly #batchSize: number;
  #subscription: EventSubscription | undefined;
  #handler: DurableBatchHandler | undefined;
  #running: Promise<void> | undefined;
  #retries = new Set<NodeJS.Timeout>();
  #idle: (() => void)[] = [];
  #stopped = false;
  #drainScheduled = false;

  constructor(
    private readonly events: EventSource,
    private readonly logger: Logger,
    options: { batchSize?: number; maxDeliveries?: number } = {},
  ) {
    this.#batchSize = options.batchSize ?? 500;
    this.maxDeliveries = options.maxDeliveries ?? 5;
  }

  start(handler: DurableBatchHandler): void {
    this.#handler = handler;
    this.#subscription = this.events.subscribe('crm.>', (envelope) => {
      this.#queue.push({ body: envelope, deliveryCount: 1 });
      this.#scheduleDrain();
    });
  }

  /** Resolves once every message received so far was handled (none queued, none waiting for a retry). */
  idle(): Promise<void> {
    if (!this.#running && !this.#drainScheduled && this.#queue.length === 0 && this.#retries.size === 0) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#subscription?.unsubscribe();
    for (const timer of this.#retries) clearTimeout(timer);
    this.#retries.clear();
    await this.#running;
  }

  /**
   * Drains on a later turn, not in the delivery's: the bus delivers each message in its own callback,
   * and on PGlite a whole transaction can complete within one callback's microtasks, so draining at
   * once would apply the messages one by one instead of as a batch.
   */
  #scheduleDrain(): void {
    if (this.#drainScheduled) return;
    this.#drainScheduled = true;
    setImmediate(() => {
      this.#drainScheduled = false;
      this.#drain();
    });
  }

  #drain(): void {
    if (this.#running || this.#stopped) return;
    this.#running = (async () => {
      while (this.#queue.length > 0 && !this.#stopped) {
        const batch = this.#queue.splice(0, this.#batchSize);
        let result: Awaited<ReturnType<DurableBatchHandler>>;
        try {
          result = await this.#handler!(batch);
        } catch (error) {
          this.logger.error({ err: error }, 'a crm batch failed; it will be handed out again');
          result = { retry: batch };
        }
        const again = result.retry.filter((delivery) => delivery.deliveryCount < this.maxDeliveries);
        if (again.length < result.retry.length) {
          this.logger.error(
            { dropped: result.retry.length - again.length },
            'crm messages dropped after their last delivery',
          );
        }
        if (again.length > 0) this.#retryLater(again, result.retryDelayMs ?? 1000);
      }
    })().finally(() => {
      this.#running = undefined;
      if (this.#queue.length > 0 && !this.#stopped) this.#drain();
      else this.#notifyIdle();
    });
  }

  #retryLater(deliveries: DurableDelivery[], delayMs: number): void {
    const timer = setTimeout(() => {
      this.#retries.delete(timer);
      this.#queue.push(
        ...deliveries.map((delivery) => ({ ...delivery, deliveryCount: delivery.deliveryCount + 1 })),
      );
      this.#scheduleDrain();
    }, delayMs);
    timer.unref();
    this.#retries.add(timer);
  }

  #notifyIdle(): void {
    if (this.#queue.length > 0 || this.#retries.size > 0) return;
    for (const resolve of this.#idle.splice(0)) resolve();
  }
}
