import type { Envelope } from '../../../src/events/envelope.js';
import type { EventBus, EventSubscription } from '../../../src/events/event-bus.js';

/**
 * A stand-in for the broker: keeps what was published, in order. It can be made unreachable (`away`:
 * not connected, every publish fails), told to refuse the next publishes while connected (timeouts), or
 * some messages for as long as they are listed (a message the broker won't take, too large for it, say).
 */
export class RecordingBus implements EventBus {
  readonly published: { envelope: Envelope; at: bigint }[] = [];
  readonly refusedMessageIds = new Set<string>();
  failNext = 0;
  away = false;
  /** While set, publishes wait for it before they answer (a publish in flight). */
  inFlight: Promise<void> | undefined;
  attempts = 0;

  async publish(envelope: Envelope): Promise<void> {
    this.attempts += 1;
    // A publish sent while the broker is away fails, even if it comes back before the answer does.
    const away = this.away;
    await this.inFlight;
    if (away) throw new Error('broker unreachable');
    if (this.refusedMessageIds.has(envelope.messageId)) throw new Error('message refused by the broker');
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('broker unavailable');
    }
    this.published.push({ envelope, at: process.hrtime.bigint() });
  }

  get messageIds(): string[] {
    return this.published.map((entry) => entry.envelope.messageId);
  }

  connected(): boolean {
    return !this.away;
  }

  subscribe(): EventSubscription {
    return { ready: Promise.resolve(), unsubscribe: () => {} };
  }

  onReconnect() {
    return () => {};
  }

  async close(): Promise<void> {}
}
