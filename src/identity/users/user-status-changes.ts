import { EventEmitter } from 'node:events';
import type { UserStatus } from './user.js';

const changes = new EventEmitter();

/**
 * Calls `listener` whenever this process changes a user's status (setUserStatus): the node's
 * active-user cache learns a disable at once instead of after its few seconds (src/oidc/active-user-cache.ts).
 */
export function onUserStatusChanged(listener: (userId: string, status: UserStatus) => void): () => void {
  changes.on('changed', listener);
  return () => changes.off('changed', listener);
}

export function announceUserStatus(userId: string, status: UserStatus): void {
  changes.emit('changed', userId, status);
}
