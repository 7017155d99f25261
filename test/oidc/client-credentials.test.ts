import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceClient, createTestClient } from '../support/fixtures.js';
import { discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const allowed = ['service:crm.aggregates.read', 'service:crm.teacher_payouts.read'];

async function serviceConfig(scopes = allowed) {
  const { client, clientSecret } = await createServiceClient(service.service.db, scopes);
  return {
    client,
    clientSecret: clientSecret!,
    config: await discover(service.issuer, client.clientId, clientSecret),
  };
}

describe('client_credentials grant', () => {
  it('issues a 5-minute RS256 JWT for the client itself, with the requested service scope', async () => {
    const { client, config } = await serviceConfig();
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'service:crm.aggregates.read' });
    expect(tokens.expires_in).toBe(300);
    expect(tokens.scope).toBe('service:crm.aggregates.read');
    expect(tokens).not.toHaveProperty('refresh_token');
    expect(decodeProtectedHeader(tokens.access_token)).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({
      sub: client.clientId,
      client_id: client.clientId,
      serviceClient: true,
      iss: service.issuer,
      aud: service.service.config.apiAudience,
      scope: 'service:crm.aggregates.read',
    });
    expect(claims.exp! - claims.iat!).toBe(300);
  });

  it('grants every allowed service scope when none is asked for', async () => {
    const { config } = await serviceConfig();
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(tokens.scope?.split(' ').sort()).toEqual([...allowed].sort());
  });

  it.each([
    ['a service scope outside the client list', 'service:competitions.results.read'],
    ['one allowed and one not', 'service:crm.aggregates.read service:crm.entitlements.read'],
    ['an OIDC scope', 'openid'],
    ['a free-form scope', 'service:anything'],
  ])('refuses %s with invalid_scope instead of dropping it', async (_label, scope) => {
    const { client, clientSecret } = await serviceConfig();
    const response = await fetch(service.url('/oauth/token'), {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_scope');
  });

  it('refuses clients without the grant (a user-flow client) and public clients', async () => {
    const { client, clientSecret } = await createTestClient(service.service.db, { type: 'confidential' });
    const config = await discover(service.issuer, client.clientId, clientSecret);
    await expect(oidc.clientCredentialsGrant(config)).rejects.toMatchObject({ error: 'unauthorized_client' });
  });

  it('refuses a wrong secret with invalid_client', async () => {
    const { client } = await serviceConfig();
    const response = await fetch(service.url('/oauth/token'), {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.clientId}:wrong-secret`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_client');
  });
});
