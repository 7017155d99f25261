import crypto from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { oidc } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * Each authorization gets a grant of its own, kept 30 days, so a browser signed in as the user (a
 * thief's copy of the engine's session cookie) adds one per silent authorize (prompt=none), 30 a
 * minute per client and address. Past ~33,000 of them, recording them revoked took more values than
 * PostgreSQL binds to one statement, and every revocation of the user's sign-ins failed with 500: the
 * owner's "sign out everywhere", password change or reset, an administrator's disable. The thief kept
 * the refresh tokens for their 30 days.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

// Tens of thousands of grants written and revoked: more than the suite's 30 s default on a busy machine.
it('signs out everywhere a user with more grants than one statement binds', async () => {
  const { db } = service.service;
  const signedIn = await userWithTokens(service);
  const expiresAt = new Date(service.service.clock.now().getTime() + 24 * 60 * 60 * 1000);
  for (let batch = 0; batch < 35; batch++) {
    await db('oidc_payloads').insert(
      Array.from({ length: 1000 }, () => {
        const id = crypto.randomBytes(21).toString('base64url');
        return {
          model: 'Grant',
          id,
          payload: {
            jti: id,
            kind: 'Grant',
            accountId: signedIn.user.id,
            clientId: signedIn.client.clientId,
          },
          account_id: signedIn.user.id,
          expires_at: expiresAt,
        };
      }),
    );
  }

  const token = await mainAuthTokenFor(service, signedIn.user.id);
  const answer = await callIdentityApi(service, '/security/sessions/revoke-all', {}, { token });
  expect(answer.status).toBe(200);
  await expect(oidc.refreshTokenGrant(signedIn.config, signedIn.tokens.refresh_token!)).rejects.toMatchObject(
    {
      error: 'invalid_grant',
    },
  );
  const [{ count }] = (await db('oauth_revoked_grants').count('* as count')) as [{ count: string | number }];
  expect(Number(count)).toBeGreaterThan(35_000);
}, 120_000);
