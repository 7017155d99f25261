import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteConsent } from '../../src/oidc/models/consent.js';
import { revokeRefreshTokensOf } from '../../src/oidc/models/oauth-refresh-token.js';
import { exchangeSsoCode, requestSsoCode, ssoParties } from '../oidc/support/sso-code.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A third-party client exchanging a one-time SSO code
 * while the user withdraws its consent: the exchange read the consent before the withdrawal committed
 * and saved its grant after the withdrawal had deleted the client's grants, so the client kept the
 * grant, a refresh token for 30 days, after the consent was withdrawn (the race a silent authorize had,
 * authorize-racing-consent-withdrawal.postgres.test.ts).
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe('a one-time SSO code exchanged while its consent is withdrawn on PostgreSQL', () => {
  it('leaves the client no grant once the withdrawal is done', async () => {
    const { db } = service.service;
    const parties = await ssoParties(service);
    const issued = await requestSsoCode(service, parties.accessToken, {
      client_id: parties.client.clientId,
      scope: 'openid profile',
    });
    expect(issued.status).toBe(201);
    const { code } = (await issued.json()) as { code: string };

    // The withdrawal (DELETE /oauth/consents/:clientId) has deleted the consent and the client's
    // grants, and not yet committed, when the client exchanges the code.
    let exchanged!: Promise<Response>;
    await db.transaction(async (trx) => {
      expect(await deleteConsent(trx, parties.user.id, parties.client.clientId)).toBe(true);
      await revokeRefreshTokensOf(trx, parties.user.id, parties.client.clientId, new Date());
      exchanged = exchangeSsoCode(
        service,
        { clientId: parties.client.clientId, clientSecret: parties.clientSecret },
        code,
      );
      await untilWaitingForLocks(service.service.db, 1, exchanged);
    });

    const answer = await exchanged;
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'invalid_grant' });
    const grants = await db('oidc_payloads')
      .where({ model: 'Grant', account_id: parties.user.id })
      .whereRaw(`payload->>'clientId' = ?`, [parties.client.clientId]);
    expect(grants).toHaveLength(0);
  });
});
