import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { mainAuthToken, startTestSession } from '../support/sign-in.js';
import { buildAuthorizationRequest, completeAuthorization, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// PostgreSQL only (runs when DATABASE_URL is set): an application authorizing silently (prompt=none)
// in a loop while the user withdraws its consent, in real concurrent transactions. An authorization
// that read the consent before the withdrawal committed saved its grant after the withdrawal deleted
// the client's grants: the application got a code, and a refresh token for 30 days, after the consent
// was withdrawn.
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe('silent authorizations racing a consent withdrawal on PostgreSQL', () => {
  it('leave the application no grant once the withdrawal is done', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const { client } = await createTestClient(db);
    const config = await discover(service.issuer, client.clientId);
    const browser = new HttpBrowser(service.issuer);
    await completeAuthorization(config, browser, { identifier: user.email!, password: user.password });
    const token = await mainAuthToken(service, user, { sessionId: await startTestSession(service, user.id) });
    let survivors = 0;
    for (let round = 0; round < 30; round++) {
      const [consent] = await db('consents').where({ user_id: user.id, client_id: client.clientId });
      const withdraw = async () => {
        await new Promise((resolve) => setTimeout(resolve, round % 5));
        const answer = await fetch(service.url(`/oauth/consents/${client.clientId}`), {
          method: 'DELETE',
          headers: { authorization: `Bearer ${token}` },
        });
        expect(answer.status).toBe(204);
      };
      const authorize = async () => {
        const codes: string[] = [];
        for (let i = 0; i < 4; i++) {
          const request = await buildAuthorizationRequest(config, { prompt: 'none' });
          const callback = new URL((await browser.navigate(request.url.toString())).url);
          const code = callback.searchParams.get('code');
          if (code) codes.push(code);
        }
        return codes;
      };
      await Promise.all([withdraw(), authorize(), authorize()]);
      // Whatever code was issued, the application holds no live grant now.
      survivors += Number(
        (
          await db('oidc_payloads')
            .where({ model: 'Grant', account_id: user.id })
            .whereRaw(`payload->>'clientId' = ?`, [client.clientId])
            .count({ count: '*' })
        )[0]!.count,
      );
      await db('oidc_payloads')
        .where({ model: 'Grant', account_id: user.id })
        .whereRaw(`payload->>'clientId' = ?`, [client.clientId])
        .delete();
      await db('consents').insert(consent);
    }
    expect(survivors).toBe(0);
  });
});
