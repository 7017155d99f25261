import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestLoginToken } from '../oidc/support/inbound-login.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { completeAuthorization, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

// PostgreSQL only (runs when DATABASE_URL is set): an inbound login redeemed while the user ends the
// application's sign-in its token came from, in real concurrent transactions. Whichever commits first,
// no session survives the revocation, and neither request fails (no deadlock).
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const identityApi = (path: string) => service.url(`/api/v2/identity${path}`);

async function refreshStatus(refreshCookie: string): Promise<number> {
  const answer = await fetch(identityApi('/auth/refresh'), {
    method: 'POST',
    headers: { cookie: refreshCookie },
  });
  return answer.status;
}

describe('inbound login racing the revocation of its grant on PostgreSQL', () => {
  it('starts no session that outlives the revocation', async () => {
    const { db } = service.service;
    for (let round = 0; round < 8; round++) {
      const user = await createTestUser(db);
      const { client, clientSecret } = await createTestClient(db, { type: 'confidential', firstParty: true });
      const config = await discover(service.issuer, client.clientId, clientSecret);
      const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
        identifier: user.email!,
        password: user.password,
        parameters: { scope: 'openid roles' },
      });
      const issued = await requestLoginToken(
        service,
        { clientId: client.clientId, clientSecret: clientSecret! },
        { access_token: tokens.access_token },
      );
      expect(issued.status).toBe(201);
      const { login_token: loginToken } = (await issued.json()) as { login_token: string };
      const ownerToken = await mainAuthTokenFor(service, user.id);
      const listed = await callIdentityApi(service, '/security/app-sign-ins', undefined, {
        token: ownerToken,
      });
      const [signIn] = (listed.body as { items: { id: string }[] }).items;

      const [redeemed, ended] = await Promise.all([
        fetch(identityApi('/auth/inbound'), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ loginToken }),
        }),
        callIdentityApi(service, `/security/app-sign-ins/${encodeURIComponent(signIn!.id)}`, undefined, {
          token: ownerToken,
          method: 'DELETE',
        }),
      ]);
      expect(ended.status).toBe(200);
      expect([200, 401]).toContain(redeemed.status);
      if (redeemed.status === 200) {
        const refreshCookie = redeemed.headers
          .getSetCookie()
          .find((cookie) => cookie.startsWith('service_id_refresh_token='))!
          .split(';')[0]!;
        const { accessToken } = (await redeemed.json()) as { accessToken: string };
        expect(await refreshStatus(refreshCookie)).toBe(401);
        const call = await callIdentityApi(service, '/security/sessions', undefined, { token: accessToken });
        expect(call.status).toBe(401);
      }
    }
  });
});
