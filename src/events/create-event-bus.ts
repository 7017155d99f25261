import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { EventBus } from './event-bus.js';
import { InProcessEventBus } from './in-process-bus.js';

/**
 * EVENT_BUS=nats: NATS JetStream; otherwise (the default) the embedded in-process bus. The NATS client
 * (~70 files) is loaded only when it is configured: a start's CPU is mostly module loading.
 */
export async function createEventBus(
  config: Pick<Config, 'eventBus' | 'nats'>,
  logger: Logger,
): Promise<EventBus> {
  if (config.eventBus === 'nats') {
    const { NatsJetStreamBus } = await import('../../adapters/event-bus/nats-jetstream-bus.js');
    return new NatsJetStreamBus({
      url: config.nats.url,
      stream: config.nats.stream,
      subjectPrefix: config.nats.subjectPrefix,
      credentials: config.nats.credentials,
      logger,
    });
  }
  return new InProcessEventBus(logger);
}
