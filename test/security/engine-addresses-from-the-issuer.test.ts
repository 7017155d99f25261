import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createTestClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The engine wrote the addresses it hands out from the request's Host (behind TRUST_PROXY,
 * X-Forwarded-Host): a Host that is no host (`a b`, `[`, a port past 65535) made it throw while
 * building them, a 500 at authorize and at logout for anyone who sent one; and a forged one put
 * another site in the action of the logout form, with the form's one-time xsrf value. The addresses
 * are the issuer's, whatever the request says (src/oidc/engine-origin.ts).
 */

let direct: TestService;
let behindProxy: TestService;
let clientId: string;
beforeAll(async () => {
  direct = await startTestService();
  behindProxy = await startTestService({ env: { TRUST_PROXY: 'true' } });
  clientId = (await createTestClient(direct.service.db)).client.clientId;
});
afterAll(async () => {
  await direct?.close();
  await behindProxy?.close();
});

/** A GET with the headers given verbatim (fetch sets Host itself); answers the status and the text. */
function rawGet(
  service: TestService,
  path: string,
  headers: string,
): Promise<{ status: number; text: string }> {
  const { port } = new URL(service.issuer);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () =>
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0), text: answer }),
    );
    socket.setTimeout(10_000, () => socket.destroy());
    socket.write(`GET ${path} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`);
  });
}

function authorizePath(): string {
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: callbackUri,
    response_type: 'code',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });
  return `/oauth/authorize?${query}`;
}

const formAction = (text: string) => /<form[^>]*action="([^"]*)"/.exec(text)?.[1];

describe('a Host header that is no host', () => {
  for (const host of ['a b', '[', 'idp.example:99999']) {
    it(`(${host}) gets the sign-in at authorize and the logout form, not a 500`, async () => {
      const authorize = await rawGet(direct, authorizePath(), `Host: ${host}\r\n`);
      expect(authorize.status).toBe(303);
      expect(authorize.text).toMatch(/\r\nLocation: \/en\/auth\?interaction=/);
      const logout = await rawGet(direct, '/oauth/end_session', `Host: ${host}\r\n`);
      expect(logout.status).toBe(200);
      expect(formAction(logout.text)).toBe(direct.url('/oauth/end_session/confirm'));
    });
  }
});

describe("another site's name", () => {
  it('in Host is not where the logout form posts', async () => {
    const logout = await rawGet(direct, '/oauth/end_session', 'Host: evil.example\r\n');
    expect(logout.status).toBe(200);
    expect(formAction(logout.text)).toBe(direct.url('/oauth/end_session/confirm'));
  });

  it('in X-Forwarded-Host behind a trusted proxy is not where the logout form posts', async () => {
    const { host } = new URL(behindProxy.issuer);
    const logout = await rawGet(
      behindProxy,
      '/oauth/end_session',
      `Host: ${host}\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\n`,
    );
    expect(logout.status).toBe(200);
    expect(formAction(logout.text)).toBe(behindProxy.url('/oauth/end_session/confirm'));
  });

  it('in an absolute request target is not where the logout form posts', async () => {
    const { host } = new URL(direct.issuer);
    const logout = await rawGet(direct, 'http://evil.example/oauth/end_session', `Host: ${host}\r\n`);
    expect(logout.status).toBe(200);
    expect(formAction(logout.text)).toBe(direct.url('/oauth/end_session/confirm'));
  });
});
