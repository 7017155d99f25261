import type { Envelope } from '../events/envelope.js';

/** What a worker sends the primary (and the primary the other workers): an event to deliver locally. */
export interface ForwardedEvent {
  kind: 'identity-service:event';
  envelope: Envelope;
}

export function isForwardedEvent(message: unknown): message is ForwardedEvent {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { kind?: unknown }).kind === 'identity-service:event'
  );
}
