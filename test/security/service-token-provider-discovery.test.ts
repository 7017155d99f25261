import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceTokenProvider } from '../../src/platform/client/service-token-provider.js';

/**
 * The kit's client-credentials helper sends the service's secret to the token endpoint the issuer's
 * discovery document names. A document served at the issuer's address that names another issuer (a
 * proxy or cache serving someone else's, a tampered copy) is not the issuer's word: OpenID Connect
 * Discovery 1.0 §4.3 has the client refuse it. It used to take its token endpoint and post the secret
 * there.
 */
let server: http.Server;
let base: string;
const posted: string[] = [];
let discovery: Record<string, unknown> = {};

beforeAll(async () => {
  server = http.createServer((request, response) => {
    if (request.url === '/.well-known/openid-configuration') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(discovery));
      return;
    }
    posted.push(`${request.method} ${request.url} ${request.headers.authorization ?? ''}`);
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ access_token: 'a-token', expires_in: 300 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const provider = (issuer: string) =>
  serviceTokenProvider({ issuer, clientId: 'crm', clientSecret: 'the-secret', scope: 'service:crm.read' });

describe("the kit's service tokens and the issuer's discovery document", () => {
  it('refuse a document naming another issuer, and send the secret nowhere', async () => {
    discovery = { issuer: 'https://id.attacker.example', token_endpoint: `${base}/stolen` };
    await expect(provider(base)()).rejects.toThrow(/names the issuer https:\/\/id\.attacker\.example/);
    expect(posted).toEqual([]);
  });

  it('take the token endpoint of a document naming the issuer it was fetched for', async () => {
    discovery = { issuer: base, token_endpoint: `${base}/oauth/token` };
    expect(await provider(`${base}/`)()).toBe('a-token');
    expect(posted).toEqual([`POST /oauth/token Basic ${Buffer.from('crm:the-secret').toString('base64')}`]);
  });
});
