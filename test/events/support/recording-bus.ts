import type { Envelope } from '../../../src/events/envelope.js';
import type { EventBus, EventSubscription } from '../../../src/events/event-bus.js';

/**
 * A stand-in for the broker: keeps what was published, in order, and can be told to refuse the next
 * publishes (the broker being down).
 */
export class RecordingBus implements EventBus {
  readonly published: { envelope: Envelope; at: bigint }[] = [];
  failNext = 0;
  attempts = 0;

  async publish(envelope: Envelope): Promise<void> {
    this.attempts += 1;
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('broker unavailable');
    }
    this.published.push({ envelope, at: process.hrtime.bigint() });
  }

  get messageIds(): string[] {
    return this.published.map((entry) => entry.envelope.messageId);
  }

  subscribe(): EventSubscription {
    return { ready: Promise.resolve(), unsubscribe: () => {} };
  }

  onReconnect() {
    return () => {};
  }

  async close(): Promise<void> {}
}
