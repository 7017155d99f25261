import { z } from 'zod';
import { countSiblingNotice, onNoticeCounted } from '../identity/notifications/notice-budget.js';
import { announceSessionsEnded, onSessionsEnded } from '../identity/sessions/session-ends.js';
import { announceUserStatus, onUserStatusChanged } from '../identity/users/user-status-changes.js';
import { announceClientChange, onClientChange } from '../oidc/models/oauth-client.js';
import { announceGrantsRevoked, onGrantsRevoked } from '../oidc/models/revoked-grant.js';
import { isForwardedNotice, type ForwardedNotice } from './cluster-messages.js';

/**
 * What one worker of a cluster (HTTP_WORKERS > 1) tells its own caches, it tells the other workers'
 * through the primary: a main-auth session ended (live-session cache), OAuth grants revoked (revoked
 * grants), a user's status changed (active-user cache), a client changed (client cache), a security
 * notice sent (the hourly notice budget, which lives in memory only). Each cache also polls the
 * database, but only every few seconds: without this, a token refused on the worker that took the
 * logout was still accepted for up to 5 s on its sibling. Nodes on other machines still learn at
 * their next poll (docs/security.md).
 */
const topics: Record<string, Topic> = {
  'sessions-ended': topic(z.array(z.string()), onSessionsEnded, announceSessionsEnded),
  'grants-revoked': topic(
    z.array(z.object({ grantId: z.string(), expiresAt: z.coerce.date() })),
    onGrantsRevoked,
    announceGrantsRevoked,
  ),
  'user-status': topic(
    z.object({ userId: z.string(), status: z.enum(['active', 'disabled']) }),
    (send) => onUserStatusChanged((userId, status) => send({ userId, status })),
    ({ userId, status }) => announceUserStatus(userId, status),
  ),
  'client-changed': topic(z.string(), onClientChange, announceClientChange),
  // A security notice one worker let go counts against every worker's hourly budget: the budget is
  // the node's, not one per connection a caller can land on another worker.
  'notice-counted': topic(
    z.object({ userId: z.string().max(200), kind: z.string().max(100), at: z.number().finite() }),
    onNoticeCounted,
    countSiblingNotice,
  ),
};

/** One kind of notice: how to hear it in this worker, and how to tell it to this worker's caches. */
interface Topic {
  listen(send: (payload: unknown) => void): () => void;
  receive(payload: unknown): void;
}

function topic<T>(
  payload: z.ZodType<T>,
  listen: (send: (payload: T) => void) => () => void,
  apply: (payload: T) => void,
): Topic {
  return {
    listen,
    receive(raw) {
      const parsed = payload.safeParse(raw);
      if (parsed.success) apply(parsed.data);
    },
  };
}

/** Starts relaying this worker's notices to its siblings and theirs to it; answers how to stop. */
export function relayNoticesBetweenWorkers(): () => void {
  // A notice from a sibling is told to this worker's caches, not sent back out.
  let applying = false;
  const stops = Object.entries(topics).map(([name, { listen }]) =>
    listen((payload) => {
      if (applying) return;
      const notice: ForwardedNotice = { kind: 'identity-service:notice', topic: name, payload };
      process.send?.(notice);
    }),
  );
  const onMessage = (message: unknown) => {
    if (!isForwardedNotice(message)) return;
    applying = true;
    try {
      topics[message.topic]?.receive(message.payload);
    } finally {
      applying = false;
    }
  };
  process.on('message', onMessage);
  return () => {
    process.off('message', onMessage);
    for (const stop of stops) stop();
  };
}
