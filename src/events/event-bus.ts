import type { Envelope } from './envelope.js';

export type EventHandler = (envelope: Envelope) => void | Promise<void>;
export type Unsubscribe = () => void;

export interface EventSubscription {
  /** Resolves once messages published from now on will reach the handler. */
  ready: Promise<void>;
  unsubscribe: Unsubscribe;
}

/** Where subscribers listen: the embedded in-process bus or a broker connection. */
export interface EventSource {
  /** Calls `handler` for every message of this type (or, for `prefix.>`, of every type under the prefix) published once `ready` resolved. */
  subscribe(messageType: string, handler: EventHandler): EventSubscription;
  /**
   * Calls `handler` after the connection to the broker came back: messages may have been missed
   * meanwhile, so a subscriber's cache should resync in full.
   */
  onReconnect(handler: () => void): Unsubscribe;
}

/** What the outbox relay publishes to. */
export interface EventBus extends EventSource {
  /** Resolves when the bus has accepted the message (the broker acknowledged it); rejects otherwise. */
  publish(envelope: Envelope): Promise<void>;
  close(): Promise<void>;
  /** Whether the broker is reachable now (GET /readyz); absent: always (an in-process bus). */
  connected?(): boolean;
}
