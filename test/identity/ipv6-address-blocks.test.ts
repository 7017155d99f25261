import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditEventTypes, listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from './support/identity-client.js';

// A host picks any address of its IPv6 /64 at will (SLAAC, RFC 8981 temporary addresses): the per-IP
// limits and lockouts of the identity API count such a client by its /64. The tests send each address
// as X-Forwarded-For; the rate limiter reads Date, so fake timers move it past a flow-start window.

let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());
afterEach(() => {
  vi.useRealTimers();
});

const group = () => crypto.randomInt(0x10000).toString(16);
/** A /64 of its own for each test: `2001:db8:x:y`, to which `addressIn` adds an interface identifier. */
const uniqueBlock = () => `2001:db8:${group()}:${group()}`;
/** Another address of the block, as a temporary address (RFC 8981) would be. */
const addressIn = (block: string) => `${block}:${group()}:${group()}:${group()}:${group()}`;

/** A password login through the API (flow start, identifier, password) from `ip`; the last answer. */
async function passwordLogin(identifier: string, password: string, ip: string) {
  const started = await client.start('login', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, { ip });
  return client.step(identified.sessionId, 'password', { password }, { ip });
}

const wrong = 'not the password at all';

describe('the login lockout counts an IPv6 client by its /64', () => {
  it('the ladder of an unknown source: 5 failures from 5 addresses of one /64 lock the /64', async () => {
    const user = await createTestUser(service.service.db);
    const attacker = uniqueBlock();
    const addresses = Array.from({ length: 5 }, () => addressIn(attacker));
    for (const ip of addresses) {
      expect((await passwordLogin(user.email!, wrong, ip)).status).toBe(401);
    }
    // The 6th attempt, from a 6th address of the same /64, is refused before the password is looked at.
    const locked = await passwordLogin(user.email!, user.password, addressIn(attacker));
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('30');
    // Another /64 and an IPv4 client are other sources: the owner signs in from either.
    expect((await passwordLogin(user.email!, user.password, addressIn(uniqueBlock()))).status).toBe(200);
    expect((await passwordLogin(user.email!, user.password, randomIp())).status).toBe(200);
    // The audit log names the full address the locking failure came from, not the block.
    const [lock] = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: auditEventTypes.accountLocked,
      limit: 1,
    });
    expect(lock).toMatchObject({ ip: addresses[4], details: { consecutiveFailures: 5, source: 'ip' } });
  });

  it('the IP throttle: 20 failures from 20 addresses of one /64 make the /64 wait', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date() });
    const user = await createTestUser(service.service.db);
    const attacker = uniqueBlock();
    const addresses = Array.from({ length: 20 }, () => addressIn(attacker));
    for (const [index, ip] of addresses.entries()) {
      // Past the /64's 10 flow starts a minute (the throttle's window is 10 minutes).
      if (index === 5 || index === 15) vi.setSystemTime(Date.now() + 61_000);
      // Each failure against another identifier: no ladder of its own locks.
      expect((await passwordLogin(uniqueEmail('spray'), wrong, ip)).status).toBe(401);
    }
    const delayed = await passwordLogin(user.email!, user.password, addressIn(attacker));
    expect(delayed.status).toBe(429);
    expect(delayed.headers.get('retry-after')).toBe('60');
    expect((await passwordLogin(user.email!, user.password, addressIn(uniqueBlock()))).status).toBe(200);
    expect((await passwordLogin(user.email!, user.password, randomIp())).status).toBe(200);
    const throttled = await listAuditEvents(service.service.db, {
      type: auditEventTypes.ipThrottled,
      limit: 10,
    });
    expect(throttled.filter((event) => event.ip === addresses[19])).toHaveLength(1);
  });
});

describe('the per-IP rate limits count an IPv6 client by its /64', () => {
  it('flow starts: 10 a minute for the /64, whichever of its addresses asks', async () => {
    const block = uniqueBlock();
    for (let index = 0; index < 10; index++) {
      expect(
        (await client.post('/auth/flow/start', { flow: 'login' }, { ip: addressIn(block) })).status,
      ).toBe(200);
    }
    const limited = await client.post('/auth/flow/start', { flow: 'login' }, { ip: addressIn(block) });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    const elsewhere = [addressIn(uniqueBlock()), randomIp()];
    for (const ip of elsewhere) {
      expect((await client.post('/auth/flow/start', { flow: 'login' }, { ip })).status).toBe(200);
    }
  });

  it('codes sent: 10 in 10 minutes for the /64, whichever of its addresses asks', async () => {
    const block = uniqueBlock();
    const forgot = (ip: string) =>
      client.post('/auth/password/forgot', { identifier: uniqueEmail() }, { ip });
    for (let index = 0; index < 10; index++) {
      expect((await forgot(addressIn(block))).status).toBe(200);
    }
    const limited = await forgot(addressIn(block));
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ message: expect.stringMatching(/^Too many codes were requested/) });
    expect((await forgot(addressIn(uniqueBlock()))).status).toBe(200);
    expect((await forgot(randomIp())).status).toBe(200);
  });
});
