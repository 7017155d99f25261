import type { Envelope } from '../events/envelope.js';
import type { EventBus, EventHandler, EventSubscription, Unsubscribe } from '../events/event-bus.js';
import { isForwardedEvent, type ForwardedEvent } from './cluster-messages.js';

/**
 * The embedded bus of one worker of a cluster (HTTP_WORKERS > 1). Only one worker's relay publishes a
 * given event; it delivers to its own subscribers and forwards the event through the primary, and every
 * other worker delivers it to theirs. So the embedded bus spans the machine, as it spans the process
 * when there is one (a cache invalidated by a change on one worker is invalidated on all of them).
 */
export class ClusterEventBus implements EventBus {
  readonly #onMessage = (message: unknown) => {
    if (isForwardedEvent(message)) void this.local.publish(message.envelope);
  };

  constructor(private readonly local: EventBus) {
    process.on('message', this.#onMessage);
  }

  async publish(envelope: Envelope): Promise<void> {
    await this.local.publish(envelope);
    const message: ForwardedEvent = { kind: 'identity-service:event', envelope };
    process.send?.(message);
  }

  subscribe(messageType: string, handler: EventHandler): EventSubscription {
    return this.local.subscribe(messageType, handler);
  }

  onReconnect(handler: () => void): Unsubscribe {
    return this.local.onReconnect(handler);
  }

  connected(): boolean {
    return this.local.connected?.() ?? true;
  }

  async close(): Promise<void> {
    process.off('message', this.#onMessage);
    await this.local.close();
  }
}
