import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { revokeSession } from '../../src/identity/sessions/sessions.js';
import { createTestUser } from '../support/fixtures.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';
import { hashingThatTakes } from '../support/hashing-that-takes.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A first password (`POST /security/password`) is
 * written only while the session of its token lives, looked at again in the transaction that writes
 * it (test/security/first-password-racing-sign-out.test.ts: a revocation that committed while the
 * password was hashed). Here the revocation is in flight when the write looks: the write waits for it
 * on the session's row and then writes nothing.
 */
let service: TestService;
beforeAll(async () => {
  // Hashing that takes about a second on any machine, so the revocation begins after the request's first checks.
  service = await startTestService({
    settings: { passwordHashing: await hashingThatTakes(1000) },
  });
});
afterAll(() => service?.close());

const password = 'a thief chose this passphrase';

describe('a first password written while its session is being revoked, on PostgreSQL', () => {
  it('waits for the revocation and writes nothing', async () => {
    const { db } = service.service;
    const user = await createTestUser(db, { password: null });
    const token = await mainAuthTokenFor(service, user.id);
    const [session] = await db('sessions').where({ user_id: user.id });

    const answer = callIdentityApi(
      service,
      '/security/password',
      { newPassword: password, newPasswordConfirmation: password },
      { token },
    );
    // The request has passed its guard and is hashing; the revocation begins and holds the session.
    await sleep(250);
    const revocation = await db.transaction();
    expect(
      await revokeSession(revocation, user.id, session.id as string, 'revoked_by_user', new Date()),
    ).toBe(true);
    await untilWaitingForLocks(db, 1, answer);
    await revocation.commit();

    expect((await answer).status).toBe(401);
    expect(await findPasswordHash(db, user.id)).toBeFalsy();
  });
});
