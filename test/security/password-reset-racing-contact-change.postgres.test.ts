import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/identity/passwords/password-hash.js';
import { setVerifiedContact } from '../../src/identity/verification/verified-contact-record.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A reset code sent to the account's email before the
 * owner replaced that email (the old inbox is a thief's), used while the replacement commits. The reset
 * checked that the email still reaches the account before its transaction; it then set the thief's
 * password after the email had changed, which a reset with that code a moment later is refused.
 */
let service: TestService;
let client: IdentityClient;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

async function codeSentTo(identifier: string): Promise<string> {
  for (let tries = 0; tries < 100; tries++) {
    const code = service.service.developmentMessages.latestTo(identifier)?.code;
    if (code) return code;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no code sent to ${identifier}`);
}

describe('a password reset racing the replacement of its email on PostgreSQL', () => {
  it('does not set a password with a code of the replaced email', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const ip = randomIp();
    expect((await client.post('/auth/password/forgot', { identifier: user.email }, { ip })).status).toBe(200);
    const code = await codeSentTo(user.email!);
    const thiefsPassword = 'the old inbox keeps the account';

    let reset!: ReturnType<IdentityClient['post']>;
    // The reset has checked the code and that the email still reaches the account; it waits (on the
    // password's row the test holds) while the owner's new email is confirmed.
    await db.transaction(async (trx) => {
      await trx('user_credentials')
        .where({ user_id: user.id, type: 'password' })
        .forUpdate()
        .first('user_id');
      reset = client.post(
        '/auth/password/reset',
        { identifier: user.email, code, password: thiefsPassword, passwordConfirmation: thiefsPassword },
        { ip },
      );
      await untilWaitingForLocks(db, 1, reset);
      expect(
        await setVerifiedContact(trx, user.id, { kind: 'email', value: uniqueEmail() }, new Date()),
      ).toBe(true);
    });
    expect((await reset).status).not.toBe(200);

    const { secret_hash: stored } = (await db('user_credentials')
      .where({ user_id: user.id, type: 'password' })
      .first('secret_hash')) as { secret_hash: string };
    expect(await verifyPassword(stored, user.password)).toBe(true);
  });
});
