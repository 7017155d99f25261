import type { Logger } from '../logger.js';
import type { Envelope } from './envelope.js';
import type { EventBus, EventHandler, EventSubscription, Unsubscribe } from './event-bus.js';

/**
 * The embedded bus (EVENT_BUS unset): delivers to subscribers of this process. Delivery happens on a
 * later turn of the event loop, never inside `publish`: the relay calls `publish` while it holds its
 * transaction, and a subscriber that queries the database there would wait for it (on PGlite, forever).
 */
export class InProcessEventBus implements EventBus {
  readonly #handlers = new Map<string, Set<EventHandler>>();

  constructor(private readonly logger: Logger) {}

  async publish(envelope: Envelope): Promise<void> {
    const handlers = [...(this.#handlers.get(envelope.messageType) ?? [])];
    // `crm.>` hears every type under `crm.`, as a NATS subject wildcard does.
    for (const [pattern, subscribers] of this.#handlers) {
      if (pattern.endsWith('.>') && envelope.messageType.startsWith(pattern.slice(0, -1))) {
        handlers.push(...subscribers);
      }
    }
    if (handlers.length === 0) return;
    setImmediate(() => {
      for (const handler of handlers) {
        Promise.resolve()
          .then(() => handler(envelope))
          .catch((error: unknown) =>
            this.logger.error(
              { err: error, messageType: envelope.messageType, messageId: envelope.messageId },
              'event subscriber failed',
            ),
          );
      }
    });
  }

  subscribe(messageType: string, handler: EventHandler): EventSubscription {
    let handlers = this.#handlers.get(messageType);
    if (!handlers) this.#handlers.set(messageType, (handlers = new Set()));
    handlers.add(handler);
    return { ready: Promise.resolve(), unsubscribe: () => void handlers.delete(handler) };
  }

  /** In one process nothing disconnects. */
  onReconnect(): Unsubscribe {
    return () => {};
  }

  async close(): Promise<void> {
    this.#handlers.clear();
  }
}
