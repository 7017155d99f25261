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

/**
 * What a worker sends the primary (and the primary the other workers): something this worker told its
 * own caches (worker-notices.ts), for theirs.
 */
export interface ForwardedNotice {
  kind: 'identity-service:notice';
  topic: string;
  payload: unknown;
}

export function isForwardedNotice(message: unknown): message is ForwardedNotice {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { kind?: unknown }).kind === 'identity-service:notice'
  );
}

/** A message the primary passes from one worker to every other: an event or a notice. */
export function isForSiblings(message: unknown): message is ForwardedEvent | ForwardedNotice {
  return isForwardedEvent(message) || isForwardedNotice(message);
}
