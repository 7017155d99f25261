import type { Envelope } from '../events/envelope.js';

/** The environment variable that tells a worker its number (1 = the one that migrates and runs jobs). */
export const workerIndexVariable = 'HTTP_WORKER_INDEX';

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
