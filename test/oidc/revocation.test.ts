import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidc } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

async function revoke(body: Record<string, string>, authorization?: string) {
  const response = await fetch(service.url('/oauth/revoke'), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
    },
    body: new URLSearchParams(body),
  });
  return { status: response.status, text: await response.text() };
}

describe('POST /oauth/revoke', () => {
  it('revokes a refresh token: it can’t be used again (openid-client)', async () => {
    const { client, config, tokens } = await userWithTokens(service);
    await oidc.tokenRevocation(config, tokens.refresh_token!, { token_type_hint: 'refresh_token' });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    const [row] = await service.service.db('oauth_refresh_tokens').where({ client_id: client.clientId });
    expect(row.revoked_at).toBeInstanceOf(Date);
  });

  it('answers 200 and changes nothing for an access token (a JWT) or an unknown token', async () => {
    const { client, config, tokens } = await userWithTokens(service);
    for (const token of [tokens.access_token, 'unknown-token']) {
      const answer = await revoke({ token, client_id: client.clientId });
      expect(answer).toEqual({ status: 200, text: '' });
    }
    // The refresh token of the same authorization still works.
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).resolves.toHaveProperty(
      'access_token',
    );
  });

  it('answers 200 but leaves another client’s token alone', async () => {
    const owner = await userWithTokens(service);
    const intruder = await userWithTokens(service, 'confidential');
    await oidc.tokenRevocation(intruder.config, owner.tokens.refresh_token!);
    await expect(oidc.refreshTokenGrant(owner.config, owner.tokens.refresh_token!)).resolves.toHaveProperty(
      'access_token',
    );
  });

  it('requires client authentication and a token', async () => {
    const { client, clientSecret, tokens } = await userWithTokens(service, 'confidential');
    const wrong = await revoke(
      { token: tokens.refresh_token! },
      `Basic ${Buffer.from(`${client.clientId}:wrong`).toString('base64')}`,
    );
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.text).error).toBe('invalid_client');
    const missing = await revoke(
      {},
      `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}`,
    );
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.text).error).toBe('invalid_request');
  });
});
