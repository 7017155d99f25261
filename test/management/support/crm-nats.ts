import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { NatsJetStreamBus } from '../../../adapters/event-bus/nats-jetstream-bus.js';
import { createLogger } from '../../../src/logger.js';
import { managementStreamSubjects } from '../../../src/management/ingestion/durable-crm-source.js';
import { natsUrl, uniqueNatsEnvironment } from '../../events/support/nats-test-stream.js';

/** A NATS environment of its own (streams, subjects, durable name) for one test. */
export function crmNatsEnvironment() {
  return { ...uniqueNatsEnvironment(), NATS_CRM_CONSUMER: 'management' };
}

type Environment = ReturnType<typeof crmNatsEnvironment>;

/**
 * crm's side of the broker: publishes message texts under `<prefix><messageType>` WITHOUT a
 * Nats-Msg-Id, so the broker keeps every copy and de-duplication is the consumer's alone.
 */
export async function crmPublisher(environment: Environment) {
  const bus = new NatsJetStreamBus({
    url: natsUrl!,
    stream: environment.NATS_STREAM,
    subjectPrefix: environment.NATS_SUBJECT_PREFIX,
    logger: createLogger('silent'),
    name: 'crm-simulator-test',
  });
  await bus.ensureStream(
    environment.NATS_MANAGEMENT_STREAM,
    managementStreamSubjects.map((subject) => bus.subjectOf(subject)),
  );
  return {
    async publish(texts: string[]) {
      for (let start = 0; start < texts.length; start += 500) {
        await Promise.all(
          texts.slice(start, start + 500).map((text) => bus.publishMessage(subjectTypeOf(text), text)),
        );
      }
    },
    close: () => bus.close(),
  };
}

function subjectTypeOf(text: string): string {
  try {
    const type = (JSON.parse(text) as { messageType?: unknown }).messageType;
    if (typeof type === 'string' && /^crm\.[a-z_.]+$/.test(type)) return type;
  } catch {
    // not JSON: it travels on a subject of its own under crm.
  }
  return 'crm.unparseable';
}

/** How many messages the durable consumer still has to deliver or to see acknowledged. */
export async function consumerBacklog(environment: Environment): Promise<number> {
  const connection = await connect({ servers: natsUrl! });
  try {
    const manager = await jetstreamManager(connection);
    const info = await manager.consumers.info(
      environment.NATS_MANAGEMENT_STREAM,
      environment.NATS_CRM_CONSUMER,
    );
    return info.num_pending + info.num_ack_pending;
  } finally {
    await connection.close();
  }
}

/** Waits until the durable consumer has nothing left to deliver or to see acknowledged. */
export async function drained(environment: Environment, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const connection = await connect({ servers: natsUrl! });
  try {
    const manager = await jetstreamManager(connection);
    for (;;) {
      const info = await manager.consumers
        .info(environment.NATS_MANAGEMENT_STREAM, environment.NATS_CRM_CONSUMER)
        .catch(() => undefined);
      if (info && info.num_pending + info.num_ack_pending === 0 && info.delivered.stream_seq > 0) return;
      if (Date.now() > deadline)
        throw new Error(`the consumer did not drain: ${JSON.stringify(info?.num_pending)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await connection.close();
  }
}
