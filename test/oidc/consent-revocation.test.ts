import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, oidc } from '../support/relying-party.js';
import { mainAuthToken, userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

async function withdraw(clientId: string, authorization?: string) {
  const response = await fetch(service.url(`/oauth/consents/${encodeURIComponent(clientId)}`), {
    method: 'DELETE',
    headers: authorization ? { authorization } : {},
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

describe('DELETE /oauth/consents/:clientId', () => {
  it('deletes the consent, revokes the refresh tokens, and the next authorize asks again', async () => {
    const { user, client, config, tokens, browser } = await userWithTokens(service);
    const answer = await withdraw(client.clientId, `Bearer ${await mainAuthToken(service, user)}`);
    expect(answer.status).toBe(204);
    expect(await service.service.db('consents').where({ user_id: user.id })).toHaveLength(0);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    // Still signed in at the provider, but the consent screen is back.
    const page = await browser.navigate((await buildAuthorizationRequest(config)).url.toString());
    expect(page.html).toContain('name="decision"');
    expect(page.html).toContain('data-scope="email"');
  });

  it('answers 404 when there is no consent, and only touches the caller’s own', async () => {
    const owner = await userWithTokens(service);
    const other = await userWithTokens(service);
    const answer = await withdraw(
      owner.client.clientId,
      `Bearer ${await mainAuthToken(service, other.user)}`,
    );
    expect(answer).toMatchObject({ status: 404, body: { error: 'consent_not_found' } });
    expect(await service.service.db('consents').where({ user_id: owner.user.id })).toHaveLength(1);
  });

  it('requires the user’s main-auth access token (not an OAuth token, not none)', async () => {
    const { client, tokens } = await userWithTokens(service);
    for (const authorization of [undefined, `Bearer ${tokens.access_token}`, 'Bearer garbage']) {
      const answer = await withdraw(client.clientId, authorization);
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: 'unauthorized' });
    }
  });

  it('is also enforced for a fresh browser: no silent re-grant', async () => {
    const { user, client, config } = await userWithTokens(service);
    await withdraw(client.clientId, `Bearer ${await mainAuthToken(service, user)}`);
    const fresh = new HttpBrowser(service.issuer);
    let page = await fresh.navigate((await buildAuthorizationRequest(config)).url.toString());
    page = await fresh.submit(page, { identifier: user.email! });
    page = await fresh.submit(page, { password: user.password });
    expect(page.html).toContain('name="decision"');
  });
});
