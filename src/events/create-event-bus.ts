import { NatsJetStreamBus } from '../../adapters/event-bus/nats-jetstream-bus.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { EventBus } from './event-bus.js';
import { InProcessEventBus } from './in-process-bus.js';

/** EVENT_BUS=nats: NATS JetStream; otherwise (the default) the embedded in-process bus. */
export function createEventBus(config: Pick<Config, 'eventBus' | 'nats'>, logger: Logger): EventBus {
  if (config.eventBus === 'nats') {
    return new NatsJetStreamBus({
      url: config.nats.url,
      stream: config.nats.stream,
      subjectPrefix: config.nats.subjectPrefix,
      logger,
    });
  }
  return new InProcessEventBus(logger);
}
