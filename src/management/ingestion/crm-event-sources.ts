import { isDurableEventSource } from '../../events/durable-event-source.js';
import type { EventSource } from '../../events/event-bus.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { CrmEventSource } from './crm-consumer.js';
import { DurableCrmSource } from './durable-crm-source.js';
import { InProcessCrmSource } from './in-process-crm-source.js';

/**
 * Where this node reads crm's events: the broker's durable consumer when the bus has them (EVENT_BUS=nats),
 * else the embedded bus.
 */
export function crmEventSourceFor(
  bus: EventSource,
  config: Pick<Config, 'crm'>,
  logger: Logger,
): CrmEventSource {
  if (isDurableEventSource(bus)) {
    return new DurableCrmSource(bus, { stream: config.crm.stream, durableName: config.crm.durableName });
  }
  return new InProcessCrmSource(bus, logger);
}
