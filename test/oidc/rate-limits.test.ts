import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createServiceClient, createTestClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

let nodeA: TestService;
let nodeB: TestService;
beforeAll(async () => {
  nodeA = await startTestService();
  // A second app instance on the same database: another node of a cluster.
  nodeB = await startTestService({ database: nodeA.database });
});
afterAll(async () => {
  await nodeB?.close();
  await nodeA?.close();
});

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

function post(node: TestService, path: string, body: Record<string, string>, authorization?: string) {
  return fetch(node.url(path), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
    },
    body: new URLSearchParams(body),
  });
}

async function serviceClient() {
  const { client, clientSecret } = await createServiceClient(nodeA.service.db, [
    'service:crm.aggregates.read',
  ]);
  return { clientId: client.clientId, authorization: basic(client.clientId, clientSecret!) };
}

describe('rate limits per client_id on the OAuth endpoints', () => {
  it('token: 20 per minute, shared by two nodes; then 429 with Retry-After; other clients unaffected', async () => {
    const { authorization } = await serviceClient();
    const statuses: number[] = [];
    for (let index = 0; index < 24; index++) {
      const node = index % 2 === 0 ? nodeA : nodeB;
      const response = await post(node, '/oauth/token', { grant_type: 'client_credentials' }, authorization);
      statuses.push(response.status);
      if (response.status === 429) {
        const retryAfter = Number(response.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' });
      }
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(20);
    expect(statuses.slice(20)).toEqual([429, 429, 429, 429]);
    const other = await serviceClient();
    expect(
      (await post(nodeB, '/oauth/token', { grant_type: 'client_credentials' }, other.authorization)).status,
    ).toBe(200);
  });

  it('token: holds under 40 parallel requests', async () => {
    const { authorization } = await serviceClient();
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        post(index % 2 ? nodeA : nodeB, '/oauth/token', { grant_type: 'client_credentials' }, authorization),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
  });

  it('token: counts a public client by the client_id in the form body', async () => {
    const { client } = await createTestClient(nodeA.service.db);
    const statuses: number[] = [];
    for (let index = 0; index < 21; index++) {
      const response = await post(nodeA, '/oauth/token', {
        grant_type: 'refresh_token',
        client_id: client.clientId,
        refresh_token: 'nope',
      });
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 20).every((status) => status === 400)).toBe(true);
    expect(statuses[20]).toBe(429);
  });

  it('introspect: 100 per minute', async () => {
    const { authorization } = await serviceClient();
    const responses = await Promise.all(
      Array.from({ length: 105 }, (_, index) =>
        post(index % 2 ? nodeA : nodeB, '/oauth/introspect', { token: 'x' }, authorization),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    expect(statuses.filter((status) => status === 429)).toHaveLength(5);
  });

  it('revoke: 30 per minute', async () => {
    const { authorization } = await serviceClient();
    const responses = await Promise.all(
      Array.from({ length: 33 }, () => post(nodeA, '/oauth/revoke', { token: 'x' }, authorization)),
    );
    expect(responses.filter((response) => response.status === 200)).toHaveLength(30);
    expect(responses.filter((response) => response.status === 429)).toHaveLength(3);
  });

  it('authorize: 30 per minute, answered with an error page', async () => {
    const { client } = await createTestClient(nodeA.service.db);
    const url = (node: TestService) =>
      `${node.url('/oauth/authorize')}?${new URLSearchParams({
        client_id: client.clientId,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: callbackUri,
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      })}`;
    const responses = await Promise.all(
      Array.from({ length: 32 }, (_, index) => fetch(url(index % 2 ? nodeA : nodeB), { redirect: 'manual' })),
    );
    expect(responses.filter((response) => response.status === 303)).toHaveLength(30);
    const limited = responses.filter((response) => response.status === 429);
    expect(limited).toHaveLength(2);
    expect(limited[0]!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await limited[0]!.text()).toContain('temporarily_unavailable');
  });
});
