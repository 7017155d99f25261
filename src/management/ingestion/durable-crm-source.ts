import type {
  DurableBatchHandler,
  DurableConsumption,
  DurableEventSource,
} from '../../events/durable-event-source.js';
import type { CrmEventSource } from './crm-consumer.js';

export interface DurableCrmSourceOptions {
  /** The stream of the management domain: crm's events (crm.>) and management's own (management.>). */
  stream: string;
  durableName: string;
  batchSize?: number;
  maxDeliveries?: number;
  ackWaitMs?: number;
}

/** The subjects of the management stream (before the environment's prefix). */
export const managementStreamSubjects = ['crm.>', 'management.>'];

/** crm events from a broker's durable consumer (NATS JetStream): nodes sharing the name share the work. */
export class DurableCrmSource implements CrmEventSource {
  readonly maxDeliveries: number;
  #consumption: DurableConsumption | undefined;

  constructor(
    private readonly broker: DurableEventSource,
    private readonly options: DurableCrmSourceOptions,
  ) {
    this.maxDeliveries = options.maxDeliveries ?? 10;
  }

  start(handler: DurableBatchHandler): void {
    this.#consumption = this.broker.consumeDurable(
      {
        stream: this.options.stream,
        subjects: ['crm.>'],
        streamSubjects: managementStreamSubjects,
        durableName: this.options.durableName,
        batchSize: this.options.batchSize ?? 500,
        maxDeliveries: this.maxDeliveries,
        ackWaitMs: this.options.ackWaitMs ?? 30_000,
      },
      handler,
    );
  }

  async stop(): Promise<void> {
    await this.#consumption?.stop();
  }
}
