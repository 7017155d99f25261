import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/identity/passwords/password-hash.js';
import { savePasswordHash } from '../../src/identity/passwords/password-credential.js';
import { revokeUserSessions } from '../../src/identity/sessions/sessions.js';
import { createTestUser } from '../support/fixtures.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). Someone who knows the password and holds a session
 * (a thief) changes the password at the moment the owner resets it with a code. The change had checked
 * the old password, read before the reset; it then wrote its own over the owner's new one, and the
 * thief, signed out by the reset, signed in again with it: the reset did not take the account back.
 */
let service: TestService;
let client: IdentityClient;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

describe('a password change racing a password reset on PostgreSQL', () => {
  it('never writes over the password the reset set', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const ip = randomIp();
    const thief = await client.login(user.email!, user.password, { ip });
    const ownersPassword = 'the owner takes it back now';
    const thiefsPassword = 'the thief keeps the account';
    const ownersHash = await hashPassword(ownersPassword);

    let changed!: ReturnType<IdentityClient['post']>;
    // The change has checked the old password and waits (on the password's row the test holds) to
    // write the new one when the reset commits.
    await db.transaction(async (trx) => {
      await trx('user_credentials')
        .where({ user_id: user.id, type: 'password' })
        .forUpdate()
        .first('user_id');
      changed = client.post(
        '/auth/password/change',
        {
          currentPassword: user.password,
          newPassword: thiefsPassword,
          newPasswordConfirmation: thiefsPassword,
        },
        { ip, token: thief.accessToken },
      );
      await untilWaitingForLocks(db, 1, changed);
      await savePasswordHash(trx, user.id, ownersHash, new Date());
      await revokeUserSessions(trx, user.id, { reason: 'password_reset' }, new Date());
    });
    expect((await changed).status).not.toBe(200);

    const { secret_hash: stored } = (await db('user_credentials')
      .where({ user_id: user.id, type: 'password' })
      .first('secret_hash')) as { secret_hash: string };
    expect(await verifyPassword(stored, ownersPassword)).toBe(true);
    expect(await db('sessions').where({ user_id: user.id, is_revoked: false })).toHaveLength(0);
  });
});
