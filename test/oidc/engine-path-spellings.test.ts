import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createServiceClient, createTestClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The engine's router answers any letter case and a trailing slash. Those spellings used to skip
 * everything in front of it that matches paths exactly: the per-client rate limits, the client_id
 * checks, our own userinfo and end_session. Only its own spellings reach it now.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function serviceClientAuthorization() {
  const { client, clientSecret } = await createServiceClient(service.service.db, [
    'service:crm.aggregates.read',
  ]);
  return basic(client.clientId, clientSecret!);
}

const tokenRequest = (path: string, authorization: string) =>
  fetch(service.url(path), {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });

const interactions = async () =>
  Number(
    (
      (await service.service.db('oidc_payloads').where({ model: 'Interaction' }).count({ n: '*' })) as {
        n: string | number;
      }[]
    )[0]!.n,
  );

describe('other spellings of the engine’s paths', () => {
  it('token: /OAUTH/TOKEN and /oauth/token/ are unknown paths; a client gets no tokens past its budget', async () => {
    const authorization = await serviceClientAuthorization();
    for (const path of ['/OAUTH/TOKEN', '/oauth/token/', '/Oauth/Token']) {
      const response = await tokenRequest(path, authorization);
      expect(response.status, path).toBe(404);
      expect(await response.text(), path).not.toContain('access_token');
    }
    const statuses: number[] = [];
    for (let index = 0; index < 21; index++) {
      statuses.push((await tokenRequest('/oauth/token', authorization)).status);
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(20);
    expect(statuses[20]).toBe(429);
  });

  it('authorize: other spellings store no interaction; the real path still leads to sign-in', async () => {
    const { client } = await createTestClient(service.service.db);
    const query = new URLSearchParams({
      client_id: client.clientId,
      response_type: 'code',
      scope: 'openid',
      redirect_uri: callbackUri,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const before = await interactions();
    for (const path of ['/OAUTH/AUTHORIZE', '/oauth/authorize/', '/oauth/Authorize']) {
      const response = await fetch(service.url(`${path}?${query}`), { redirect: 'manual' });
      expect(response.status, path).toBe(404);
    }
    expect(await interactions()).toBe(before);
    const real = await fetch(service.url(`/oauth/authorize?${query}`), { redirect: 'manual' });
    expect(real.status).toBe(303);
    expect(await interactions()).toBe(before + 1);
  });

  // (Our own routes, userinfo among them, match without case, as @koa/router does: they are ours.)
  it('end_session, revocation and discovery: only their own spellings answer', async () => {
    for (const path of [
      '/OAUTH/END_SESSION',
      '/oauth/end_session/',
      '/OAUTH/REVOKE',
      '/.WELL-KNOWN/OPENID-CONFIGURATION',
      '/.well-known/openid-configuration/',
    ]) {
      expect((await fetch(service.url(path), { redirect: 'manual' })).status, path).toBe(404);
    }
    const discovery = await fetch(service.url('/.well-known/openid-configuration'));
    expect(discovery.status).toBe(200);
  });
});

describe('client_ids no client can have', () => {
  it('are not remembered: a flood of long ones leaves the heap where it was', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const usedHeap = () => {
      gc();
      return v8.getHeapStatistics().used_heap_size;
    };
    const longId = (index: number) => `${index}-${'x'.repeat(14_000)}`;
    // end_session hands its client_id to the engine's client lookup; nothing limits its rate.
    const flood = async (from: number, count: number) => {
      for (let index = from; index < from + count; index += 50) {
        await Promise.all(
          Array.from({ length: 50 }, (_, offset) =>
            fetch(service.url(`/oauth/end_session?client_id=${longId(index + offset)}`), {
              redirect: 'manual',
            }).then((response) => response.arrayBuffer()),
          ),
        );
      }
    };
    await flood(0, 100);
    const before = usedHeap();
    await flood(100, 1_000);
    // 1,000 ids of 14 KB: 14 MB if each were kept.
    expect(usedHeap() - before).toBeLessThan(5_000_000);
  });
});
