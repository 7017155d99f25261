import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientRateLimits } from '../../src/oidc/client-rate-limits.js';
import { buildAuthorizationRequest, oidc } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A public client proves itself at the token endpoint only by the token the engine issues (a code and
 * its PKCE verifier anyone holding them can send), so its budget (20 tokens a minute) was checked
 * before the engine ran and counted after it issued. Parallel exchanges all passed the check: with 5
 * left, 10 codes exchanged at once got 10 tokens. On PostgreSQL (CI's second pass) the requests
 * really run side by side.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe("a public client's token budget under parallel code exchanges", () => {
  it('issues exactly what is left of it', async () => {
    const { client, config, browser } = await userWithTokens(service);
    // Ten more codes of the same browser session (signed in and consented above).
    const authorizations = [];
    for (let index = 0; index < 10; index++) {
      const request = await buildAuthorizationRequest(config, { prompt: 'none' });
      const callback = new URL((await browser.navigate(request.url.toString())).url);
      expect(callback.searchParams.get('code')).toBeTruthy();
      authorizations.push({ request, callback });
    }
    // The first exchange counted 1; 14 more by hand leave 5 of the 20.
    for (let index = 0; index < 14; index++) {
      await service.service.rateLimits.consume(clientRateLimits.token, client.clientId);
    }

    const outcomes = await Promise.all(
      authorizations.map(({ request, callback }) =>
        oidc
          .authorizationCodeGrant(config, callback, {
            pkceCodeVerifier: request.codeVerifier,
            expectedState: request.state,
            expectedNonce: request.nonce,
          })
          .then(
            () => 'issued',
            (error: unknown) => (error as { status?: number }).status ?? String(error),
          ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'issued')).toHaveLength(5);
    expect(outcomes.filter((outcome) => outcome === 429)).toHaveLength(5);
  });
});
