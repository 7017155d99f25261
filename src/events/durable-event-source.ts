/**
 * A broker that keeps a consumer's position (NATS JetStream's durable consumers): messages are handed
 * out in batches and stay pending until acknowledged, so a consumer that dies between its effect and
 * its acknowledgement gets them again. The embedded bus has no such thing (a process is all there is).
 */

/**
 * One delivered message: as published (a text from a broker, the object itself from the embedded bus),
 * and which delivery this is (1 = the first).
 */
export interface DurableDelivery {
  body: unknown;
  deliveryCount: number;
}

export interface DurableConsumerOptions {
  /** The stream holding the messages (created, or given these subjects, when missing). */
  stream: string;
  /** Subjects (wildcards allowed) the consumer reads. */
  subjects: string[];
  /** Subjects the stream captures, when more than the consumer reads (default: `subjects`). */
  streamSubjects?: string[];
  /** Name of the durable consumer: nodes sharing it share the work. */
  durableName: string;
  /** At most this many messages per batch. */
  batchSize: number;
  /** The broker delivers a message at most this many times. */
  maxDeliveries: number;
  /** An unacknowledged message is delivered again after this long (a consumer that died). */
  ackWaitMs: number;
}

/**
 * Called with each batch; resolves once its effects are committed. Everything not listed in `retry` is
 * then acknowledged; the listed ones (and the whole batch when the handler throws) are delivered again
 * after `retryDelayMs`.
 */
export type DurableBatchHandler = (
  batch: DurableDelivery[],
) => Promise<{ retry: DurableDelivery[]; retryDelayMs?: number }>;

export interface DurableConsumption {
  /** Stops taking messages and waits for the batch in flight. */
  stop(): Promise<void>;
}

export interface DurableEventSource {
  consumeDurable(options: DurableConsumerOptions, handler: DurableBatchHandler): DurableConsumption;
}

export function isDurableEventSource(value: unknown): value is DurableEventSource {
  return typeof (value as Partial<DurableEventSource> | undefined)?.consumeDurable === 'function';
}
