import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser, type Page } from '../support/http-browser.js';
import { mainAuthTokenFor } from '../support/identity-api-client.js';
import { buildAuthorizationRequest, discover, oidc, silentAuthorization } from '../support/relying-party.js';
import { startTestSession } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, MovableClock, randomIp } from './support/identity-client.js';

/**
 * POST /auth/qr/request: before approving a QR sign-in, the signed-in device learns which device asks
 * (its browser, IP address and when it showed the code), so a link someone else sent is recognisable.
 */

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();

const chromeOnWindows =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const safariOnIphone =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
  await replaceFunnel(
    service.service.db,
    'login',
    [{ stepId: 'qr', mandatory: true, order: 10 }],
    clock.now(),
  );
});
afterAll(() => service?.close());

/** A device (the attacker's, say) shows a QR code: the flow's first screen carries its token. */
async function showCode(requester: { ip: string; userAgent: string }) {
  const shownAt = clock.now();
  const started = await client.start('login', requester);
  const token = (started.screen[0]!.data!.qr as { token: string }).token;
  return { token, sessionId: started.sessionId, shownAt };
}

/** The signed-in phone that opened the code's link, from its own address and browser. */
async function approver() {
  const user = await createTestUser(service.service.db);
  const accessToken = await mainAuthTokenFor(service, user.id);
  const options = { token: accessToken, ip: randomIp(), userAgent: safariOnIphone };
  return {
    describe: (token: string) => client.post('/auth/qr/request', { token }, options),
    approve: (token: string) => client.post('/auth/qr/approve', { token }, options),
  };
}

describe('POST /auth/qr/request', () => {
  it('names the device that showed the code, not the one asking about it', async () => {
    const code = await showCode({ ip: '203.0.113.77', userAgent: chromeOnWindows });
    const phone = await approver();

    const described = await phone.describe(code.token);
    expect(described.status, JSON.stringify(described.body)).toBe(200);
    expect(described.body).toEqual({
      status: 'pending',
      browser: 'Chrome on Windows',
      ip: '203.0.113.77',
      requestedAt: expect.any(String),
      // Shown by the identity API's own flow: it signs in to this service, no application.
      application: null,
    });
    const requestedAt = new Date(described.body.requestedAt as string).getTime();
    expect(Math.abs(requestedAt - code.shownAt.getTime())).toBeLessThan(5000);
    expect(described.headers.get('cache-control')).toBe('no-store');

    // The waiting page (no sign-in needed) learns nothing of the requester: the state alone. And
    // describing approves nothing; approving still works afterwards.
    const status = await client.post('/auth/qr/status', { token: code.token }, { ip: randomIp() });
    expect(status).toMatchObject({ status: 200, body: { status: 'pending' } });
    expect(Object.keys(status.body)).toEqual(['status']);
    expect((await phone.approve(code.token)).status).toBe(200);
  });

  it('answers only a signed-in user', async () => {
    const code = await showCode({ ip: '203.0.113.79', userAgent: chromeOnWindows });
    const anonymous = await client.post('/auth/qr/request', { token: code.token }, { ip: randomIp() });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).not.toHaveProperty('ip');
  });

  it('answers 404 qr_not_found for a code that does not exist', async () => {
    const phone = await approver();
    const unknown = await phone.describe('no-such-code');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'qr_not_found', message: expect.any(String) });
  });

  it('answers 410 qr_expired once the code expired, or was approved, not who asked', async () => {
    const phone = await approver();
    const expiring = await showCode({ ip: '203.0.113.80', userAgent: chromeOnWindows });
    clock.advance(121 * 1000);
    const expired = await phone.describe(expiring.token);
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ error: 'qr_expired', message: expect.any(String) });
    expect(expired.body).not.toHaveProperty('ip');
    expect(expired.body).not.toHaveProperty('browser');

    const approved = await showCode({ ip: '203.0.113.81', userAgent: chromeOnWindows });
    expect((await phone.approve(approved.token)).status).toBe(200);
    expect(await phone.describe(approved.token)).toMatchObject({
      status: 410,
      body: { error: 'qr_expired' },
    });
  });

  it('refuses a malformed body with 400', async () => {
    const phone = await approver();
    const malformed = await phone.describe('');
    expect(malformed.status).toBe(400);
  });
});

describe('an approval ends with the session that approved it', () => {
  it('revoked before the waiting device takes it: qr_expired there; another session’s approval stays', async () => {
    const user = await createTestUser(service.service.db);
    const approving = await startTestSession(service, user.id);
    const other = await startTestSession(service, user.id);
    const phone = { ip: randomIp(), userAgent: safariOnIphone };
    const requester = { ip: randomIp(), userAgent: chromeOnWindows };
    const revokedCode = await showCode(requester);
    const keptCode = await showCode(requester);
    const approve = async (token: string, sessionId: string) =>
      client.post(
        '/auth/qr/approve',
        { token },
        { ...phone, token: await mainAuthTokenFor(service, user.id, { sessionId }) },
      );
    expect((await approve(revokedCode.token, approving)).status).toBe(200);
    expect((await approve(keptCode.token, other)).status).toBe(200);

    const revoked = await client.delete(`/security/sessions/${approving}`, {
      ...phone,
      token: await mainAuthTokenFor(service, user.id, { sessionId: other }),
    });
    expect(revoked.status).toBe(200);
    const status = await client.post('/auth/qr/status', { token: revokedCode.token }, requester);
    expect(status.body).toEqual({ status: 'expired' });
    const taken = await client.step(revokedCode.sessionId, 'qr', {}, requester);
    expect(taken.status).toBe(410);
    expect(taken.body).toMatchObject({ error: 'qr_expired', message: expect.any(String) });
    expect(taken.body).not.toHaveProperty('accessToken');

    const kept = await client.step(keptCode.sessionId, 'qr', {}, requester);
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.accessToken).toEqual(expect.any(String));
  });
  it('a session a QR approval started ends with the approving session, as a thief’s would', async () => {
    // A thief holding a copy of the owner's access token approves a QR code of their own machine and
    // takes it at once: the session that starts must not outlive the owner's logout of the copied one.
    const user = await createTestUser(service.service.db);
    const stolen = await startTestSession(service, user.id);
    const other = await startTestSession(service, user.id);
    const phone = { ip: randomIp(), userAgent: safariOnIphone };
    const thief = { ip: randomIp(), userAgent: chromeOnWindows };
    const code = await showCode(thief);
    const approved = await client.post(
      '/auth/qr/approve',
      { token: code.token },
      { ...phone, token: await mainAuthTokenFor(service, user.id, { sessionId: stolen }) },
    );
    expect(approved.status).toBe(200);
    const taken = loginFrom((await client.step(code.sessionId, 'qr', {}, thief)) as never);
    expect((await client.get('/security/sessions', { ...thief, token: taken.accessToken })).status).toBe(200);

    // The owner throws the copied session out from another of their sessions.
    const revoked = await client.delete(`/security/sessions/${stolen}`, {
      ...phone,
      token: await mainAuthTokenFor(service, user.id, { sessionId: other }),
    });
    expect(revoked.status).toBe(200);

    const used = await client.get('/security/sessions', { ...thief, token: taken.accessToken });
    expect(used.status).toBe(401);
    const refreshed = await client.post('/auth/refresh', {}, { ...thief, cookie: taken.refreshCookie });
    expect(refreshed.status).toBe(401);
    // The owner's other session is not the approving one's: it stays.
    const kept = await client.get('/security/sessions', {
      ...phone,
      token: await mainAuthTokenFor(service, user.id, { sessionId: other }),
    });
    expect(kept.status).toBe(200);
  });
  it('the approving session ended between the take and the new session: no session starts', async () => {
    const user = await createTestUser(service.service.db);
    const approving = await startTestSession(service, user.id);
    const requester = { ip: randomIp(), userAgent: chromeOnWindows };
    const code = await showCode(requester);
    const approved = await client.post(
      '/auth/qr/approve',
      { token: code.token },
      { ip: randomIp(), token: await mainAuthTokenFor(service, user.id, { sessionId: approving }) },
    );
    expect(approved.status).toBe(200);
    // As a revocation that commits after the waiting device took the approval, before its session.
    await service.service.db('sessions').where({ id: approving }).update({ is_revoked: true });
    const taken = await client.step(code.sessionId, 'qr', {}, requester);
    expect(taken.status).toBe(410);
    expect(taken.body).not.toHaveProperty('accessToken');
  });

  describe('on the OIDC pages', () => {
    /** A thief's browser at an application's authorize: the QR page, and the approval by a copied token. */
    async function approvedInThiefsBrowser() {
      const user = await createTestUser(service.service.db);
      const stolen = await startTestSession(service, user.id);
      const other = await startTestSession(service, user.id);
      const { client: app } = await createTestClient(service.service.db);
      const config = await discover(service.issuer, app.clientId);
      const browser = new HttpBrowser(service.issuer);
      const request = await buildAuthorizationRequest(config);
      const page: Page = await browser.navigate(request.url.toString());
      const token = /#token=([A-Za-z0-9_%-]+)/.exec(page.html)?.[1];
      expect(token, page.html.slice(0, 2000)).toBeDefined();
      const approved = await client.post(
        '/auth/qr/approve',
        { token: decodeURIComponent(token!) },
        { ip: randomIp(), token: await mainAuthTokenFor(service, user.id, { sessionId: stolen }) },
      );
      expect(approved.status).toBe(200);
      const revokeStolen = async () => {
        const revoked = await client.delete(`/security/sessions/${stolen}`, {
          ip: randomIp(),
          token: await mainAuthTokenFor(service, user.id, { sessionId: other }),
        });
        expect(revoked.status).toBe(200);
      };
      return { config, browser, request, page, revokeStolen };
    }

    it('the browser signed in by the approval, and its applications, end with the approving session', async () => {
      const { config, browser, request, page, revokeStolen } = await approvedInThiefsBrowser();
      let answer = await browser.submit(page, {});
      if (answer.html.includes('name="decision"'))
        answer = await browser.submit(answer, { decision: 'allow' });
      const tokens = await oidc.authorizationCodeGrant(config, new URL(answer.url), {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
      });
      expect((await silentAuthorization(config, browser)).code).toEqual(expect.any(String));

      await revokeStolen();

      expect(await silentAuthorization(config, browser)).toEqual({ code: null, error: 'login_required' });
      await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
        error: 'invalid_grant',
      });
    });

    it('revoked before the browser came back to the engine: it is not signed in there', async () => {
      const { config, browser, page, revokeStolen } = await approvedInThiefsBrowser();
      const { location } = await browser.submitWithoutFollowing(page, {});
      await revokeStolen();
      await browser.navigate(new URL(location, service.issuer).toString());
      expect(await silentAuthorization(config, browser)).toEqual({ code: null, error: 'login_required' });
    });
  });
});
