import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover } from '../support/relying-party.js';
import { mainAuthTokenFor } from '../support/identity-api-client.js';
import { startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, MovableClock, randomIp } from '../identity/support/identity-client.js';

/**
 * A device the account signed in on before is the account's own lockout source: its guesses skip the
 * IP throttle and the account-wide bound, and have a ladder of their own, so that attackers elsewhere
 * never lock the owner out of their laptop. But a stolen main-auth token approves a QR sign-in of any
 * browser of the thief's, and that made the browser a device "the account signed in on": each new one
 * a fresh ladder for password guesses at the login, five per browser, as many browsers as the thief
 * liked. A device that only ever had a session another session started is no source of its own.
 */
const clock = new MovableClock();
let service: TestService;
let client: IdentityClient;

const qrFunnel: FunnelStep[] = [{ stepId: 'qr', mandatory: true, order: 10 }];
const passwordFunnel: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

beforeAll(async () => {
  service = await startTestService({
    env: { TRUST_PROXY: 'true' },
    clock,
    settings: {
      rateLimits: {
        'identity-flow-start': { points: 1000, durationSeconds: 60 },
        'identity-flow-step': { points: 1000, durationSeconds: 60 },
      },
    },
  });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

const useFunnel = (steps: FunnelStep[]) => replaceFunnel(service.service.db, 'login', steps, clock.now());

/** A new browser of the thief's, signed in by a QR approval with `token`; answers its device cookie. */
async function browserApprovedWith(token: string, ip: string): Promise<string> {
  await useFunnel(qrFunnel);
  const started = await client.start('login', { ip });
  const qr = (started.screen[0]!.data!.qr as { token: string }).token;
  const approved = await client.post('/auth/qr/approve', { token: qr }, { token, ip: randomIp() });
  expect(approved.status, JSON.stringify(approved.body)).toBe(200);
  const signedIn = loginFrom((await client.step(started.sessionId, 'qr', {}, { ip })) as never);
  await useFunnel(passwordFunnel);
  return signedIn.deviceCookie!;
}

/** A password login from `ip` with the browser's device cookie; answers the password step's status. */
async function guess(identifier: string, password: string, ip: string, cookie: string): Promise<number> {
  const started = await client.start('login', { ip, cookie });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, { ip, cookie });
  return (await client.step(identified.sessionId, 'password', { password }, { ip, cookie })).status;
}

describe('password guesses from browsers a stolen session signed in', () => {
  it('are counted like any unknown source’s: a new browser gets no new five', async () => {
    const user = await createTestUser(service.service.db);
    const stolen = await mainAuthTokenFor(service, user.id, {
      sessionId: await startTestSession(service, user.id),
    });
    const ip = randomIp();
    const first = await browserApprovedWith(stolen, ip);
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect(await guess(user.email!, 'not it at all', ip, first)).toBe(401);
    }
    expect(await guess(user.email!, 'not it at all', ip, first)).toBe(429);

    const second = await browserApprovedWith(stolen, ip);
    expect(await guess(user.email!, 'not it at all', ip, second)).toBe(429);
  });

  it('are counted like any unknown source’s when the browser was approved on the sign-in pages', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const stolen = await mainAuthTokenFor(service, user.id, {
      sessionId: await startTestSession(service, user.id),
    });
    // An application's sign-in page in the thief's browser, whose funnel is the QR code alone.
    await useFunnel(qrFunnel);
    const { client: app } = await createTestClient(db);
    const request = await buildAuthorizationRequest(await discover(service.issuer, app.clientId));
    const browser = new HttpBrowser(service.issuer);
    const waiting = await browser.navigate(request.url.toString());
    const qr = /#token=([^"&]+)"/.exec(waiting.html)![1]!;
    const approved = await client.post('/auth/qr/approve', { token: qr }, { token: stolen, ip: randomIp() });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    let page = await browser.submit(waiting, {});
    if (page.html.includes('name="decision"')) page = await browser.submit(page, { decision: 'allow' });
    expect(page.url.startsWith('http://localhost:8080/callback')).toBe(true);
    const device = browser
      .cookieHeader(new URL(service.issuer))
      .split('; ')
      .find((cookie) => cookie.startsWith('service_id_device='))!;
    await useFunnel(passwordFunnel);

    // Five failures from the thief's address lock it; the approved browser there is no way around.
    const ip = randomIp();
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const started = await client.start('login', { ip });
      const identified = await client.pass(
        started.sessionId,
        'phone-email',
        { identifier: user.email },
        { ip },
      );
      expect(
        (await client.step(identified.sessionId, 'password', { password: 'nope nope' }, { ip })).status,
      ).toBe(401);
    }
    expect(await guess(user.email!, 'not it at all', ip, device)).toBe(429);
  });

  it('leave a browser the owner signed in on with the password their own source', async () => {
    await useFunnel(passwordFunnel);
    const user = await createTestUser(service.service.db);
    const owner = await client.login(user.email!, user.password, { ip: randomIp() });
    const ip = randomIp();
    // Someone else's failures from the owner's address lock that address, not the owner's browser.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const started = await client.start('login', { ip });
      const identified = await client.pass(
        started.sessionId,
        'phone-email',
        { identifier: user.email },
        { ip },
      );
      expect(
        (await client.step(identified.sessionId, 'password', { password: 'nope nope' }, { ip })).status,
      ).toBe(401);
    }
    expect(await guess(user.email!, user.password, ip, owner.deviceCookie!)).toBe(200);
  });
});
