import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeSession } from '../../src/identity/sessions/sessions.js';
import { exchangeSsoCode, requestSsoCode, ssoParties } from '../oidc/support/sso-code.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A one-time SSO code exchanged while the session that
 * asked for it is revoked (a logout, the owner throwing a copied token's session out). The exchange had
 * redeemed the code before the revocation looked at it; it then recorded its grant as started by that
 * session and read the session, live: the revocation had not committed, and had looked for the grants
 * the session started before the record was there. The client kept the grant, with a 30-day refresh
 * token, after the session it came from ended.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe('a one-time SSO code exchanged while its session is revoked on PostgreSQL', () => {
  it('leaves the client no live grant once the revocation is done', async () => {
    const { db } = service.service;
    const parties = await ssoParties(service);
    const issued = await requestSsoCode(service, parties.accessToken, { client_id: parties.client.clientId });
    expect(issued.status).toBe(201);
    const { code } = (await issued.json()) as { code: string };
    const { session_id: sessionId } = await db('verification_codes')
      .where({ identifier: parties.client.clientId, purpose: 'sso_otc' })
      .first('session_id');

    // The exchange has redeemed the code and saved its grant; it waits (on the consent the test holds)
    // while the revocation ends the session and looks for its grants, and goes on before that commits.
    let exchanged!: Promise<Response>;
    const revocation = await db.transaction();
    await db.transaction(async (trx) => {
      await trx('consents')
        .where({ user_id: parties.user.id, client_id: parties.client.clientId })
        .forUpdate()
        .first('user_id');
      exchanged = exchangeSsoCode(
        service,
        { clientId: parties.client.clientId, clientSecret: parties.clientSecret },
        code,
      );
      await untilWaitingForLocks(service.service.db, 1);
      expect(await revokeSession(revocation, parties.user.id, sessionId, 'logout', new Date())).toBe(true);
    });
    await untilWaitingForLocks(service.service.db, 1, exchanged);
    await revocation.commit();

    const answer = await exchanged;
    if (answer.status === 200) {
      const { refresh_token: refreshToken } = (await answer.json()) as { refresh_token?: string };
      expect(refreshToken).toBeDefined();
      const refreshed = await fetch(service.url('/oauth/token'), {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${parties.client.clientId}:${parties.clientSecret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken! }),
      });
      expect(refreshed.status).toBe(400);
    } else {
      expect(answer.status).toBe(400);
    }
    const grants = await db('oidc_payloads')
      .where({ model: 'Grant', account_id: parties.user.id })
      .whereRaw(`payload->>'clientId' = ?`, [parties.client.clientId]);
    expect(grants).toHaveLength(0);
  });
});
