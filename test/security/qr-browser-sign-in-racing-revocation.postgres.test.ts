import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeSession } from '../../src/identity/sessions/sessions.js';
import { recordEngineSessionStarter } from '../../src/oidc/models/engine-session-starters.js';
import { createTestUser } from '../support/fixtures.js';
import { startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A browser signed in on the OIDC pages by a QR
 * approval comes back to the engine, which saves its session and records the approving session, while
 * that session is revoked. The revocation had looked for the engine sessions it vouched for before the
 * record was there, and the record read the approving session with a plain read, live (the revocation
 * not yet committed): the thief's browser went on signing in to applications silently for 30 days.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe('a QR-approved browser saved while its approving session is revoked on PostgreSQL', () => {
  it('ends the browser’s engine session once the revocation is done', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const approving = await startTestSession(service, user.id);
    const id = randomUUID();
    const uid = randomUUID();

    let recorded!: Promise<void>;
    await db.transaction(async (trx) => {
      expect(await revokeSession(trx, user.id, approving, 'logout', new Date())).toBe(true);
      // The engine saves the browser's session (committed) and records who vouched for it.
      await db('oidc_payloads').insert({
        model: 'Session',
        id,
        uid,
        account_id: user.id,
        payload: JSON.stringify({ accountId: user.id, uid, jti: id, kind: 'Session', authorizations: {} }),
        expires_at: new Date(Date.now() + 3_600_000),
      });
      recorded = recordEngineSessionStarter(db, uid, approving, new Date());
      await untilWaitingForLocks(service.service.db, 1, recorded);
    });
    await recorded;

    const row = await db('oidc_payloads').where({ model: 'Session', id }).first('ended_at');
    expect(row.ended_at).not.toBeNull();
  });
});
