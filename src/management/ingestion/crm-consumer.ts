import type { DurableBatchHandler, DurableDelivery } from '../../events/durable-event-source.js';
import type { Logger } from '../../logger.js';
import type { ManagementMetrics } from '../management-metrics.js';
import { ingestCrmMessages, setAsideUnprocessable, type IngestionDeps } from './ingest-crm-messages.js';

/** Where crm messages come from: NATS JetStream (durable) or the embedded bus. */
export interface CrmEventSource {
  /** The source delivers a message at most this many times. */
  readonly maxDeliveries: number;
  start(handler: DurableBatchHandler): void;
  stop(): Promise<void>;
}

/** First redelivery delay of a failed message; doubles per delivery, at most 5 minutes. */
const retryDelayMs = (deliveryCount: number) => Math.min(1000 * 2 ** (deliveryCount - 1), 300_000);

/**
 * The management consumer: each batch the source hands out is applied in one transaction
 * (ingestCrmMessages) before the source acknowledges it. A batch that fails is taken apart: each
 * message alone, so one message that can't be applied doesn't hold back the others; one that still
 * fails is delivered again, and on its last delivery is kept as a dead letter (processing_failed)
 * rather than dropped by the broker.
 */
export class CrmConsumer {
  constructor(
    private readonly deps: IngestionDeps & {
      source: CrmEventSource;
      logger: Logger;
      metrics?: ManagementMetrics;
    },
  ) {}

  start(): void {
    this.deps.source.start((batch) => this.#handle(batch));
  }

  stop(): Promise<void> {
    return this.deps.source.stop();
  }

  async #handle(batch: DurableDelivery[]): Promise<{ retry: DurableDelivery[]; retryDelayMs?: number }> {
    try {
      await this.#apply(batch);
      return { retry: [] };
    } catch (error) {
      this.deps.logger.warn(
        { err: error, size: batch.length },
        'a crm batch failed; applying its messages one by one',
      );
    }
    const retry: DurableDelivery[] = [];
    for (const delivery of batch) {
      try {
        await this.#apply([delivery]);
      } catch (error) {
        if (delivery.deliveryCount < this.deps.source.maxDeliveries) {
          retry.push(delivery);
          continue;
        }
        try {
          const outcome = await setAsideUnprocessable(this.deps, delivery.body, error);
          this.deps.logger.error(
            { err: error, outcome },
            'a crm message failed at its last delivery; set aside',
          );
        } catch (setAsideError) {
          this.deps.logger.error({ err: setAsideError }, 'a crm message failed and could not be set aside');
          retry.push(delivery);
        }
      }
    }
    const first = retry[0];
    return { retry, ...(first ? { retryDelayMs: retryDelayMs(first.deliveryCount) } : {}) };
  }

  async #apply(batch: DurableDelivery[]): Promise<void> {
    const started = process.hrtime.bigint();
    const outcome = await ingestCrmMessages(
      this.deps,
      batch.map((delivery) => delivery.body),
    );
    this.deps.metrics?.countBatch(outcome, Number(process.hrtime.bigint() - started) / 1e9);
  }
}
