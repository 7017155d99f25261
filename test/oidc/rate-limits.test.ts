import http from 'node:http';
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientRateLimits } from '../../src/oidc/client-rate-limits.js';
import { callbackUri, createServiceClient, createTestClient } from '../support/fixtures.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { oidc } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let nodeA: TestService;
let nodeB: TestService;
beforeAll(async () => {
  // Behind a proxy: the tests send each caller's address as X-Forwarded-For.
  nodeA = await startTestService({ env: { TRUST_PROXY: 'true' } });
  // A second app instance on the same database: another node of a cluster.
  nodeB = await startTestService({ database: nodeA.database, env: { TRUST_PROXY: 'true' } });
});
afterAll(async () => {
  await nodeB?.close();
  await nodeA?.close();
});

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

function post(
  node: TestService,
  path: string,
  body: Record<string, string>,
  authorization?: string,
  ip?: string,
) {
  return fetch(node.url(path), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
      ...(ip ? { 'x-forwarded-for': ip } : {}),
    },
    body: new URLSearchParams(body),
  });
}

/** A POST whose body is sent chunked (no Content-Length), in two chunks a moment apart. */
function postChunked(
  node: TestService,
  path: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      node.url(path),
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode!, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    request.on('error', reject);
    const split = Math.min(5, body.length);
    request.write(body.slice(0, split));
    setTimeout(() => request.end(body.slice(split)), 5);
  });
}

function authorizeUrl(node: TestService, clientId: string, redirectUri = callbackUri) {
  return `${node.url('/oauth/authorize')}?${new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    scope: 'openid',
    redirect_uri: redirectUri,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  })}`;
}

const count = (statuses: number[], status: number) => statuses.filter((value) => value === status).length;

async function serviceClient() {
  const { client, clientSecret } = await createServiceClient(nodeA.service.db, [
    'service:crm.aggregates.read',
  ]);
  return {
    clientId: client.clientId,
    secret: clientSecret!,
    authorization: basic(client.clientId, clientSecret!),
  };
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

describe("a client's budget is spent only by requests that prove they are the client's", () => {
  it('token: wrong secrets spend the sender’s budget; the client keeps getting tokens', async () => {
    const { clientId, authorization } = await serviceClient();
    const attacker = uniqueIp();
    const statuses: number[] = [];
    for (let index = 0; index < 25; index++) {
      const response = await post(
        nodeA,
        '/oauth/token',
        { grant_type: 'client_credentials' },
        basic(clientId, 'wrong secret'),
        attacker,
      );
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 20)).toEqual(Array.from({ length: 20 }, () => 401));
    expect(statuses.slice(20)).toEqual([429, 429, 429, 429, 429]);
    // The client, from anywhere (even the attacker's address), still has its whole budget.
    for (const ip of [uniqueIp(), attacker]) {
      const response = await post(
        nodeB,
        '/oauth/token',
        { grant_type: 'client_credentials' },
        authorization,
        ip,
      );
      expect(response.status).toBe(200);
    }
  });

  it('authorize: bad redirect_uris spend the sender’s budget; the client’s users still sign in', async () => {
    const { client } = await createTestClient(nodeA.service.db);
    const attacker = uniqueIp();
    const statuses: number[] = [];
    for (let index = 0; index < 32; index++) {
      const response = await fetch(authorizeUrl(nodeA, client.clientId, 'https://evil.example/callback'), {
        redirect: 'manual',
        headers: { 'x-forwarded-for': attacker },
      });
      statuses.push(response.status);
    }
    expect(count(statuses, 400)).toBe(30);
    expect(statuses.slice(30)).toEqual([429, 429]);
    const user = await fetch(authorizeUrl(nodeB, client.clientId), {
      redirect: 'manual',
      headers: { 'x-forwarded-for': uniqueIp() },
    });
    expect(user.status).toBe(303);
  });

  it('authorize: the registered redirect_uri is public, so one address spends only its own budget', async () => {
    const { client } = await createTestClient(nodeA.service.db);
    const attacker = uniqueIp();
    const statuses: number[] = [];
    for (let index = 0; index < 32; index++) {
      const response = await fetch(authorizeUrl(index % 2 ? nodeA : nodeB, client.clientId), {
        redirect: 'manual',
        headers: { 'x-forwarded-for': attacker },
      });
      statuses.push(response.status);
    }
    expect(count(statuses, 303)).toBe(30);
    expect(statuses.slice(30)).toEqual([429, 429]);
    // Every other user of the client, on either node, still gets the sign-in page.
    for (const node of [nodeA, nodeB]) {
      const user = await fetch(authorizeUrl(node, client.clientId), {
        redirect: 'manual',
        headers: { 'x-forwarded-for': uniqueIp() },
      });
      expect(user.status).toBe(303);
    }
  });

  it('authorize and token: an IPv6 caller has the budget of its /64, not one per address', async () => {
    // A host picks any address of its /64 at will (RFC 8981 temporary addresses).
    const group = () => crypto.randomInt(0x10000).toString(16);
    const uniqueBlock = () => `2001:db8:${group()}:${group()}`;
    const addressIn = (block: string) => `${block}:${group()}:${group()}:${group()}:${group()}`;
    const { client } = await createTestClient(nodeA.service.db);
    const authorize = (ip: string) =>
      fetch(authorizeUrl(nodeA, client.clientId), { redirect: 'manual', headers: { 'x-forwarded-for': ip } });
    const attacker = uniqueBlock();
    const statuses: number[] = [];
    for (let index = 0; index < 31; index++) statuses.push((await authorize(addressIn(attacker))).status);
    expect(count(statuses, 303)).toBe(30);
    expect(statuses[30]).toBe(429);
    expect((await authorize(addressIn(uniqueBlock()))).status).toBe(303);
    expect((await authorize(uniqueIp())).status).toBe(303);

    // Requests that name no known client: the /64's budget of 20 a minute.
    const unknownClient = (ip: string) =>
      post(
        nodeA,
        '/oauth/token',
        { grant_type: 'client_credentials', client_id: `unknown-${crypto.randomUUID()}` },
        undefined,
        ip,
      );
    const tokenStatuses: number[] = [];
    for (let index = 0; index < 21; index++) {
      tokenStatuses.push((await unknownClient(addressIn(attacker))).status);
    }
    expect(count(tokenStatuses, 401)).toBe(20);
    expect(tokenStatuses[20]).toBe(429);
    expect((await unknownClient(addressIn(uniqueBlock()))).status).toBe(401);
    expect((await unknownClient(uniqueIp())).status).toBe(401);
  });

  it('token, public client: failed requests count per address; issued tokens count for the client', async () => {
    const { client, config, tokens } = await userWithTokens(nodeA);
    const attacker = uniqueIp();
    const garbage = (ip: string) =>
      post(
        nodeA,
        '/oauth/token',
        { grant_type: 'refresh_token', client_id: client.clientId, refresh_token: 'nope' },
        undefined,
        ip,
      );
    const statuses: number[] = [];
    for (let index = 0; index < 22; index++) statuses.push((await garbage(attacker)).status);
    expect(count(statuses, 400)).toBe(20);
    expect(statuses.slice(20)).toEqual([429, 429]);
    expect((await garbage(uniqueIp())).status).toBe(400);

    // The code exchange counted 1 for the client; spend all but one more of its budget by hand.
    for (let index = 0; index < 18; index++) {
      await nodeA.service.rateLimits.consume(clientRateLimits.token, client.clientId);
    }
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toBeTruthy();
    // That refresh spent the budget: the client's next request waits, wherever it comes from.
    const spent = await garbage(uniqueIp());
    expect(spent.status).toBe(429);
    expect(spent.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('token, public client: a live refresh token proves the client, so the address’s budget is not spent', async () => {
    const { client, config, tokens } = await userWithTokens(nodeA);
    const shared = uniqueIp();
    // Someone at the same address spends that address's budget for this client with garbage.
    for (let index = 0; index < 20; index++) {
      await post(
        nodeA,
        '/oauth/token',
        { grant_type: 'refresh_token', client_id: client.clientId, refresh_token: 'nope' },
        undefined,
        shared,
      );
    }
    const garbage = await post(
      nodeA,
      '/oauth/token',
      { grant_type: 'refresh_token', client_id: client.clientId, refresh_token: 'nope' },
      undefined,
      shared,
    );
    expect(garbage.status).toBe(429);
    // The client's own refresh from that address still goes through: its token proves it.
    const refreshed = await fetch(nodeA.url('/oauth/token'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': shared },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: client.clientId,
        refresh_token: tokens.refresh_token!,
      }),
    });
    expect(refreshed.status).toBe(200);
    // And it was counted once, against the client (the code exchange counted one before it).
    const { refresh_token: rotated } = (await refreshed.json()) as { refresh_token: string };
    for (let index = 0; index < 17; index++) {
      await nodeA.service.rateLimits.consume(clientRateLimits.token, client.clientId);
    }
    expect((await oidc.refreshTokenGrant(config, rotated)).access_token).toBeTruthy();
    const spent = await post(
      nodeA,
      '/oauth/token',
      { grant_type: 'refresh_token', client_id: client.clientId, refresh_token: 'nope' },
      undefined,
      uniqueIp(),
    );
    expect(spent.status).toBe(429);
  });

  it('token: a wrong secret is answered 401 even once the client has spent its budget', async () => {
    const { clientId, authorization } = await serviceClient();
    for (let index = 0; index < 20; index++) {
      const served = await post(nodeA, '/oauth/token', { grant_type: 'client_credentials' }, authorization);
      expect(served.status).toBe(200);
    }
    // The client's budget is spent; a wrong secret is still a wrong secret (401, the engine's answer),
    // and draws only from its sender's budget: 20 answers, then 429 for that address.
    const ip = uniqueIp();
    const statuses: number[] = [];
    for (let index = 0; index < 21; index++) {
      const response = await post(
        index % 2 ? nodeA : nodeB,
        '/oauth/token',
        { grant_type: 'client_credentials' },
        basic(clientId, 'wrong secret'),
        ip,
      );
      statuses.push(response.status);
    }
    expect(count(statuses, 401)).toBe(20);
    expect(statuses[20]).toBe(429);
  });

  it('token: a body is read as the engine reads it: a client_id past the 1,000th parameter is not seen', async () => {
    const { clientId, secret, authorization } = await serviceClient();
    for (let index = 0; index < 20; index++) {
      const response = await post(nodeA, '/oauth/token', { grant_type: 'client_credentials' }, authorization);
      expect(response.status).toBe(200);
    }
    // The engine's parser keeps the first 1,000 parameters: to it, the client_id is given once.
    const padding = Array.from({ length: 997 }, (_, index) => `p${index}=`).join('&');
    const response = await fetch(nodeA.url('/oauth/token'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': uniqueIp() },
      body: `grant_type=client_credentials&client_id=${clientId}&client_secret=${secret}&${padding}&client_id=${clientId}`,
    });
    expect(response.status).toBe(429);
  });

  it('token: client_ids no client has count against the sender’s address, not one budget each', async () => {
    const ip = uniqueIp();
    const statuses: number[] = [];
    for (let index = 0; index < 22; index++) {
      const response = await post(
        nodeA,
        '/oauth/token',
        { grant_type: 'client_credentials', client_id: `unknown-${crypto.randomUUID()}` },
        undefined,
        ip,
      );
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 20).every((status) => status === 401)).toBe(true);
    expect(statuses.slice(20)).toEqual([429, 429]);
  });

  it('token: under a parallel flood of wrong secrets from three addresses the client gets exactly its 20', async () => {
    const { clientId, authorization } = await serviceClient();
    const attackers = [uniqueIp(), uniqueIp(), uniqueIp()];
    const attack = attackers.flatMap((ip) =>
      Array.from({ length: 30 }, (_, index) =>
        post(
          index % 2 ? nodeA : nodeB,
          '/oauth/token',
          { grant_type: 'client_credentials' },
          basic(clientId, 'wrong secret'),
          ip,
        ).then((response) => ({ ip, status: response.status })),
      ),
    );
    const genuine = Array.from({ length: 20 }, (_, index) =>
      post(
        index % 2 ? nodeA : nodeB,
        '/oauth/token',
        { grant_type: 'client_credentials' },
        authorization,
        uniqueIp(),
      ),
    );
    const [attacked, served] = await Promise.all([Promise.all(attack), Promise.all(genuine)]);
    expect(served.map((response) => response.status)).toEqual(Array.from({ length: 20 }, () => 200));
    for (const ip of attackers) {
      const statuses = attacked.filter((answer) => answer.ip === ip).map((answer) => answer.status);
      expect(count(statuses, 401), ip).toBe(20);
      expect(count(statuses, 429), ip).toBe(10);
    }
    // The client's own budget is exact: the 21st request waits.
    expect(
      (await post(nodeA, '/oauth/token', { grant_type: 'client_credentials' }, authorization)).status,
    ).toBe(429);
  });
});

describe('bodies sent chunked (no Content-Length)', () => {
  it('revoke: count like any other, and the engine still reads them', async () => {
    const { client } = await createTestClient(nodeA.service.db);
    const ip = uniqueIp();
    const answers = [];
    for (let index = 0; index < 31; index++) {
      answers.push(
        await postChunked(nodeA, '/oauth/revoke', `client_id=${client.clientId}&token=not-a-token`, {
          'x-forwarded-for': ip,
        }),
      );
    }
    // 200: the engine read the token parameter from the chunked body.
    expect(answers.slice(0, 30).map((answer) => answer.status)).toEqual(
      Array.from({ length: 30 }, () => 200),
    );
    expect(answers[30]!.status).toBe(429);
  });

  it('introspect: our own route still reads the body after the limiter did', async () => {
    const { authorization } = await serviceClient();
    const answer = await postChunked(nodeA, '/oauth/introspect', 'token=not-a-token', { authorization });
    // Without the token parameter it would be 400 invalid_request.
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ active: false });
  });

  it('token: a body that names no client counts against the sender’s address', async () => {
    const ip = uniqueIp();
    const statuses: number[] = [];
    for (let index = 0; index < 21; index++) {
      statuses.push(
        (await postChunked(nodeA, '/oauth/token', 'grant_type=client_credentials', { 'x-forwarded-for': ip }))
          .status,
      );
    }
    expect(statuses.slice(0, 20).every((status) => status >= 400 && status < 429)).toBe(true);
    expect(statuses[20]).toBe(429);
  });

  it('token: a chunked body above the engine’s limit gets a 400, not a hang or a 500', async () => {
    const answer = await postChunked(
      nodeA,
      '/oauth/token',
      `grant_type=client_credentials&padding=${'p'.repeat(60 * 1024)}`,
      { 'x-forwarded-for': uniqueIp() },
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_request' });
  });
});

describe('client_ids no client can have (longer than 100 characters, or not printable ASCII)', () => {
  it('are refused with invalid_client before they reach a lookup or a counter', async () => {
    const tooLong = 'x'.repeat(101);
    const page = await fetch(authorizeUrl(nodeA, tooLong), { redirect: 'manual' });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('invalid_client');

    const byBasic = await post(
      nodeA,
      '/oauth/token',
      { grant_type: 'client_credentials' },
      basic(tooLong, 's'),
    );
    expect(byBasic.status).toBe(401);
    expect(byBasic.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect(await byBasic.json()).toMatchObject({ error: 'invalid_client' });

    // A NUL byte can't even be stored: it used to fail the counter's statement (500).
    for (const path of ['/oauth/token', '/oauth/revoke', '/oauth/introspect']) {
      const response = await post(nodeA, path, {
        grant_type: 'client_credentials',
        client_id: 'a\u0000b',
        token: 't',
      });
      expect(response.status, path).toBe(401);
      expect(await response.json(), path).toMatchObject({ error: 'invalid_client' });
    }
  });
});
