import http from 'node:http';
import net from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestInfo } from '../../src/http/request-info.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';

/** The address requestInfo sees for a request from `peer` with this X-Forwarded-For, behind `hops` proxies. */
function callerIp(hops: number, forwardedFor: string | undefined, peer = '192.0.2.1'): string {
  const app = new Koa();
  app.proxy = hops > 0;
  app.maxIpsCount = hops;
  const socket = new net.Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: peer });
  const request = new http.IncomingMessage(socket);
  if (forwardedFor !== undefined) request.headers['x-forwarded-for'] = forwardedFor;
  return requestInfo(app.createContext(request, new http.ServerResponse(request))).ip;
}

describe('the caller’s address behind TRUST_PROXY', () => {
  it('is the address the trusted proxy appended, never one the caller wrote', () => {
    expect(callerIp(1, '203.0.113.9')).toBe('203.0.113.9');
    expect(callerIp(1, '6.6.6.6, 203.0.113.9')).toBe('203.0.113.9');
    expect(callerIp(1, 'anything, 6.6.6.6,203.0.113.9')).toBe('203.0.113.9');
    // Two proxies (e.g. a CDN, then a load balancer): the second address from the right.
    expect(callerIp(2, '6.6.6.6, 203.0.113.9, 10.0.0.2')).toBe('203.0.113.9');
    expect(callerIp(2, '6.6.6.6, 2001:db8::7, 10.0.0.2')).toBe('2001:db8::7');
  });

  it('falls back to the connection’s peer when that entry is not an IP address', () => {
    expect(callerIp(1, undefined)).toBe('192.0.2.1');
    expect(callerIp(1, 'z'.repeat(300))).toBe('192.0.2.1');
    expect(callerIp(1, '203.0.113.9:443')).toBe('192.0.2.1');
    expect(callerIp(1, `fe80::1%${'x'.repeat(300)}`)).toBe('192.0.2.1');
  });

  it('ignores X-Forwarded-For without TRUST_PROXY', () => {
    expect(callerIp(0, '203.0.113.9')).toBe('192.0.2.1');
  });
});

describe('per-IP limits behind trusted proxies', () => {
  let oneProxy: TestService;
  let twoProxies: TestService;
  beforeAll(async () => {
    oneProxy = await startTestService({ env: { TRUST_PROXY: 'true' } });
    twoProxies = await startTestService({ database: oneProxy.database, env: { TRUST_PROXY: '2' } });
  });
  afterAll(async () => {
    await twoProxies?.close();
    await oneProxy?.close();
  });

  async function flowStarts(service: TestService, forwardedFor: () => string): Promise<number[]> {
    const statuses: number[] = [];
    for (let index = 0; index < 11; index++) {
      const response = await fetch(service.url('/api/v2/identity/auth/flow/start'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor() },
        body: JSON.stringify({ flow: 'login' }),
      });
      statuses.push(response.status);
    }
    return statuses;
  }

  it('a caller writing a new leftmost X-Forwarded-For each time still gets 10 flow starts a minute', async () => {
    const caller = uniqueIp();
    const statuses = await flowStarts(oneProxy, () => `${uniqueIp()}, ${caller}`);
    expect(statuses.slice(0, 10)).toEqual(Array.from({ length: 10 }, () => 200));
    expect(statuses[10]).toBe(429);
  });

  it('TRUST_PROXY=2: the caller is the second address from the right', async () => {
    const caller = uniqueIp();
    const statuses = await flowStarts(twoProxies, () => `${uniqueIp()}, ${caller}, 10.0.0.2`);
    expect(statuses.slice(0, 10)).toEqual(Array.from({ length: 10 }, () => 200));
    expect(statuses[10]).toBe(429);
  });
});
