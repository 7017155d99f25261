import { EventEmitter } from 'node:events';

const ends = new EventEmitter();

/**
 * Calls `listener` whenever this process revokes main-auth sessions (logout, revocation, password
 * change or reset, disable): the node's live-session cache refuses their access tokens at once
 * (src/identity/sessions/live-session-cache.ts).
 */
export function onSessionsEnded(listener: (sessionIds: string[]) => void): () => void {
  ends.on('ended', listener);
  return () => ends.off('ended', listener);
}

export function announceSessionsEnded(sessionIds: string[]): void {
  if (sessionIds.length > 0) ends.emit('ended', sessionIds);
}
