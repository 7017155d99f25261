// A stand-in for one worker of a cluster (test/cluster/worker-notices.test.ts): it relays notices as a
// worker does (src/cluster/worker-notices.ts), announces what the test asks, and reports to the test
// what its own caches would hear.
import { relayNoticesBetweenWorkers } from '../../../src/cluster/worker-notices.js';
import { announceSessionsEnded, onSessionsEnded } from '../../../src/identity/sessions/session-ends.js';
import { announceUserStatus, onUserStatusChanged } from '../../../src/identity/users/user-status-changes.js';
import { announceClientChange, onClientChange } from '../../../src/oidc/models/oauth-client.js';
import { announceGrantsRevoked, onGrantsRevoked } from '../../../src/oidc/models/revoked-grant.js';

relayNoticesBetweenWorkers();
const heard = (topic: string, payload: unknown) => process.send!({ kind: 'test:heard', topic, payload });
onSessionsEnded((ids) => heard('sessions-ended', ids));
onGrantsRevoked((revoked) =>
  heard(
    'grants-revoked',
    revoked.map(({ grantId, expiresAt }) => ({ grantId, expiresAt: expiresAt.toISOString() })),
  ),
);
onUserStatusChanged((userId, status) => heard('user-status', { userId, status }));
onClientChange((clientId) => heard('client-changed', clientId));

process.on('message', (message: { kind?: string; topic?: string; payload?: never }) => {
  if (message.kind !== 'test:announce') return;
  if (message.topic === 'sessions-ended') announceSessionsEnded(message.payload!);
  if (message.topic === 'grants-revoked') {
    const revoked = message.payload! as { grantId: string; expiresAt: string }[];
    announceGrantsRevoked(
      revoked.map(({ grantId, expiresAt }) => ({ grantId, expiresAt: new Date(expiresAt) })),
    );
  }
  if (message.topic === 'user-status') {
    const { userId, status } = message.payload! as { userId: string; status: 'active' | 'disabled' };
    announceUserStatus(userId, status);
  }
  if (message.topic === 'client-changed') announceClientChange(message.payload!);
});
process.send!({ kind: 'test:ready' });
