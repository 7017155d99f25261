import crypto from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { sha256 } from '../../src/crypto/digest.js';
import { grantRole } from '../../src/identity/access/user-access.js';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { sessionCleanupTasks } from '../../src/identity/sessions/session-cleanup.js';
import { cleanupExpiredRecords } from '../../src/jobs/cleanup-expired-records.js';
import { createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, MovableClock, randomIp, refreshCookieOf } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());
afterEach(() => {
  vi.useRealTimers();
});

const chrome =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

describe('refresh: rotation in one transaction, reuse detection', () => {
  it('rotates the refresh cookie and issues an access token with the current roles', async () => {
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    expect(decodeJwt(login.accessToken).roles).toEqual([]);
    await grantRole(service.service.db, user.id, 'super_admin');

    const refreshed = await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, sessionId: login.sessionId });
    const claims = decodeJwt(refreshed.body.accessToken as string);
    expect(claims).toMatchObject({
      sub: user.id,
      sessionId: login.sessionId,
      roles: ['super_admin'],
      permissions: ['*'],
    });
    expect(claims.tokenId).not.toBe(decodeJwt(login.accessToken).tokenId);
    const rotated = refreshCookieOf(refreshed);
    expect(rotated).toBeDefined();
    expect(rotated).not.toBe(login.refreshCookie);

    const again = await client.post('/auth/refresh', undefined, { cookie: rotated! });
    expect(again.status).toBe(200);
  });

  it('treats a rotated-out token presented again as an attack: 401, and the session is revoked', async () => {
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const refreshed = await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
    const current = refreshCookieOf(refreshed)!;

    const stolen = await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
    expect(stolen.status).toBe(401);
    expect(stolen.body).toMatchObject({ error: 'invalid_refresh_token' });
    // The legitimate holder's newer token dies with the session.
    const legitimate = await client.post('/auth/refresh', undefined, { cookie: current });
    expect(legitimate.status).toBe(401);
    const session = await service.service.db('sessions').where({ id: login.sessionId }).first();
    expect(session).toMatchObject({ is_revoked: true, revoked_reason: 'refresh_token_reuse' });
    // Written to the audit log as a potential attack, each time (latest first).
    const events = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: 'identity.refresh_token.reuse_detected',
    });
    expect(events.map((event) => event.details)).toEqual([
      expect.objectContaining({
        potentialAttack: true,
        sessionId: login.sessionId,
        sessionRevokedNow: false,
      }),
      expect.objectContaining({ potentialAttack: true, sessionId: login.sessionId, sessionRevokedNow: true }),
    ]);
  });

  it('lets exactly one of many parallel refreshes with one token win', async () => {
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        client.post('/auth/refresh', undefined, { cookie: login.refreshCookie }),
      ),
    );
    const winners = results.filter((result) => result.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((result) => result.status === 401)).toHaveLength(9);
    // One rotation happened: the presented token plus exactly one successor.
    const tokens = await service.service.db('refresh_tokens').where({ session_id: login.sessionId });
    expect(tokens).toHaveLength(2);
    // The losers presented a used token: reuse, so the session is revoked.
    const session = await service.service.db('sessions').where({ id: login.sessionId }).first();
    expect(session.is_revoked).toBe(true);
  });

  it('answers 401 and clears the cookie without a cookie, with garbage, and after 30 days', async () => {
    const missing = await client.post('/auth/refresh');
    expect(missing.status).toBe(401);
    const garbage = await client.post('/auth/refresh', undefined, {
      cookie: 'service_id_refresh_token=garbage',
    });
    expect(garbage.status).toBe(401);
    expect(garbage.setCookies.some((cookie) => cookie.attributes['max-age'] === '0')).toBe(true);

    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    clock.advance(30 * 24 * 60 * 60 * 1000 + 1000);
    try {
      const expired = await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
      expect(expired.status).toBe(401);
      // The hourly cleanup removes the expired session with its refresh tokens.
      const removed = await cleanupExpiredRecords(service.service.db, clock.now(), sessionCleanupTasks);
      expect(removed?.sessions).toBeGreaterThanOrEqual(1);
      expect(await service.service.db('sessions').where({ id: login.sessionId })).toHaveLength(0);
      expect(await service.service.db('refresh_tokens').where({ session_id: login.sessionId })).toHaveLength(
        0,
      );
    } finally {
      clock.advance(-(30 * 24 * 60 * 60 * 1000 + 1000));
    }
  });

  it('makes refresh tokens of 256 random bits (not UUIDs), stored only as their SHA-256', async () => {
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const refreshed = refreshCookieOf(
      await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie }),
    )!.split('=')[1]!;
    for (const value of [login.refreshToken, refreshed]) {
      // 32 bytes of CSPRNG output in base64url: at least the 128 bits ASVS asks of a session token.
      expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(value, 'base64url')).toHaveLength(32);
    }
    const stored = await service.service.db('refresh_tokens').where({ session_id: login.sessionId });
    expect(stored.map((row) => row.token_hash).sort()).toEqual(
      [sha256(login.refreshToken), sha256(refreshed)].sort(),
    );
    expect(JSON.stringify(stored)).not.toContain(refreshed);
  });

  it('still rotates a refresh token issued before, when tokens were UUIDs', async () => {
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const legacy = crypto.randomUUID();
    await service.service
      .db('refresh_tokens')
      .where({ token_hash: sha256(login.refreshToken) })
      .update({ token_hash: sha256(legacy) });
    const refreshed = await client.post('/auth/refresh', undefined, {
      cookie: `service_id_refresh_token=${legacy}`,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshCookieOf(refreshed)).toMatch(/^service_id_refresh_token=[A-Za-z0-9_-]{43}$/);
  });

  it('limits refreshes to 30 per minute per IP and user', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date() });
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    let cookie = (await client.login(user.email!, user.password, { ip })).refreshCookie;
    for (let index = 0; index < 30; index++) {
      const response = await client.post('/auth/refresh', undefined, { cookie, ip });
      expect(response.status).toBe(200);
      cookie = refreshCookieOf(response)!;
    }
    const limited = await client.post('/auth/refresh', undefined, { cookie, ip });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.body).toMatchObject({
      error: 'too_many_requests',
      details: { retryAfterSeconds: expect.any(Number) },
    });
    // The refused request did not use the token up: after the window it still works.
    vi.setSystemTime(Date.now() + 61_000);
    const later = await client.post('/auth/refresh', undefined, { cookie, ip });
    expect(later.status).toBe(200);
  });
});

describe('idle timeout', () => {
  const day = 24 * 60 * 60 * 1000;

  it('ends a session unused for 7 days: its refresh token and its access token are refused', async () => {
    const user = await createTestUser(service.service.db);
    const idle = await client.login(user.email!, user.password);
    clock.advance(7 * day + 1000);
    try {
      const refresh = await client.post('/auth/refresh', undefined, { cookie: idle.refreshCookie });
      expect(refresh.status).toBe(401);
      expect(refresh.body).toMatchObject({ error: 'invalid_refresh_token' });
      // Its access token lived 15 minutes by the same clock: refused as expired (a live token of an
      // ended session gets session_ended: test/identity/ended-session.test.ts).
      const managed = await client.get('/security/sessions', { token: idle.accessToken });
      expect(managed).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
      // Another session of the user no longer lists it.
      const active = await client.login(user.email!, user.password);
      const list = await client.get<{ sessions: { id: string }[] }>('/security/sessions', {
        token: active.accessToken,
      });
      expect(list.body.sessions.map((session) => session.id)).toEqual([active.sessionId]);
    } finally {
      clock.advance(-(7 * day + 1000));
    }
  });

  it('keeps a session in use: every refresh is activity', async () => {
    const user = await createTestUser(service.service.db);
    let cookie = (await client.login(user.email!, user.password)).refreshCookie;
    try {
      for (let week = 0; week < 2; week++) {
        clock.advance(6 * day);
        const refreshed = await client.post('/auth/refresh', undefined, { cookie });
        expect(refreshed.status).toBe(200);
        cookie = refreshCookieOf(refreshed)!;
      }
    } finally {
      clock.advance(-12 * day);
    }
  });

  it('takes its length from SESSION_IDLE_MINUTES', async () => {
    const shortClock = new MovableClock();
    const short = await startTestService({
      clock: shortClock,
      env: { TRUST_PROXY: 'true', SESSION_IDLE_MINUTES: '60' },
    });
    try {
      const shortClient = new IdentityClient(short);
      const user = await createTestUser(short.service.db);
      const login = await shortClient.login(user.email!, user.password);
      shortClock.advance(59 * 60 * 1000);
      const refreshed = await shortClient.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
      expect(refreshed.status).toBe(200);
      shortClock.advance(61 * 60 * 1000);
      const late = await shortClient.post('/auth/refresh', undefined, {
        cookie: refreshCookieOf(refreshed)!,
      });
      expect(late.status).toBe(401);
    } finally {
      await short.close();
    }
  });
});

describe('logout', () => {
  it('with a cookie a copy rotated out: the session ends, and the copy’s newer token with it', async () => {
    // A thief refreshed with a copy of the cookie first; the owner, who had not refreshed since, logs out.
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const stolen = await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
    expect(stolen.status).toBe(200);
    const thiefsCookie = refreshCookieOf(stolen)!;

    const logout = await client.post('/auth/logout', undefined, { cookie: login.refreshCookie });
    expect(logout.status).toBe(200);

    const refreshed = await client.post('/auth/refresh', undefined, { cookie: thiefsCookie });
    expect(refreshed.status).toBe(401);
    const me = await client.get('/auth/me', { token: stolen.body.accessToken as string });
    expect(me.status).toBe(401);
  });

  it('revokes the session, clears the cookie with Max-Age=0 on both paths and answers 200', async () => {
    const user = await createTestUser(service.service.db);
    const login = await client.login(user.email!, user.password);
    const logout = await client.post('/auth/logout', undefined, { cookie: login.refreshCookie });
    expect(logout.status).toBe(200);
    expect(logout.body).toEqual({ loggedOut: true });
    const cleared = logout.setCookies.filter((cookie) => cookie.name === 'service_id_refresh_token');
    expect(cleared).toHaveLength(2);
    for (const cookie of cleared) {
      expect(cookie.value).toBe('');
      expect(cookie.attributes).toMatchObject({
        'max-age': '0',
        httponly: true,
        secure: true,
        samesite: 'Strict',
      });
    }
    const refresh = await client.post('/auth/refresh', undefined, { cookie: login.refreshCookie });
    expect(refresh.status).toBe(401);
    const revoked = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: 'identity.session.revoked',
    });
    expect(revoked.map((event) => event.details)).toEqual([
      { sessionIds: [login.sessionId], reason: 'logout' },
    ]);
    // Logging out again, or without a cookie, is fine.
    expect((await client.post('/auth/logout')).status).toBe(200);
    // The account stays saved on the device.
    const saved = await client.get<{ accounts: { email: string }[] }>('/auth/saved-accounts', {
      cookie: login.deviceCookie!,
    });
    expect(saved.body.accounts.map((account) => account.email)).toEqual([user.email]);
  });
});

describe('sessions and devices', () => {
  it('lists the active sessions with browser, IP and which is current', async () => {
    const user = await createTestUser(service.service.db);
    const first = await client.login(user.email!, user.password, { userAgent: chrome, ip: '10.1.2.3' });
    const second = await client.login(user.email!, user.password);
    const list = await client.get<{ sessions: Record<string, unknown>[] }>('/security/sessions', {
      token: second.accessToken,
    });
    expect(list.status).toBe(200);
    expect(list.body.sessions).toHaveLength(2);
    expect(list.body.sessions.find((session) => session.id === second.sessionId)).toMatchObject({
      current: true,
      browserName: 'Firefox on Linux',
      authMethod: 'pwd',
    });
    expect(list.body.sessions.find((session) => session.id === first.sessionId)).toMatchObject({
      current: false,
      browserName: 'Chrome on macOS',
      ipAddress: '10.1.2.3',
      userAgent: chrome,
    });
  });

  it('revokes one session: its refresh token stops working', async () => {
    const user = await createTestUser(service.service.db);
    const other = await client.login(user.email!, user.password);
    const current = await client.login(user.email!, user.password);
    const revoked = await client.delete(`/security/sessions/${other.sessionId}`, {
      token: current.accessToken,
    });
    expect(revoked.status).toBe(200);
    expect((await client.post('/auth/refresh', undefined, { cookie: other.refreshCookie })).status).toBe(401);
    expect((await client.post('/auth/refresh', undefined, { cookie: current.refreshCookie })).status).toBe(
      200,
    );
    // Again, or someone else's, or not an id: 404.
    expect(
      (await client.delete(`/security/sessions/${other.sessionId}`, { token: current.accessToken })).status,
    ).toBe(404);
    const stranger = await createTestUser(service.service.db);
    const strangers = await client.login(stranger.email!, stranger.password);
    expect(
      (await client.delete(`/security/sessions/${strangers.sessionId}`, { token: current.accessToken }))
        .status,
    ).toBe(404);
    expect((await client.delete('/security/sessions/nope', { token: current.accessToken })).status).toBe(404);
    // The revoked session's access token can't manage the account any more.
    const stale = await client.get('/security/sessions', { token: other.accessToken });
    expect(stale.status).toBe(401);
    expect(stale.body.error).toBe('session_ended');
  });

  it('revokes all sessions but the current one and says how many', async () => {
    const user = await createTestUser(service.service.db);
    const others = [
      await client.login(user.email!, user.password),
      await client.login(user.email!, user.password),
    ];
    const current = await client.login(user.email!, user.password);
    const response = await client.post('/security/sessions/revoke-all', undefined, {
      token: current.accessToken,
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ revokedCount: 2 });
    for (const other of others) {
      expect((await client.post('/auth/refresh', undefined, { cookie: other.refreshCookie })).status).toBe(
        401,
      );
    }
    expect((await client.post('/auth/refresh', undefined, { cookie: current.refreshCookie })).status).toBe(
      200,
    );
    const again = await client.post('/security/sessions/revoke-all', undefined, {
      token: current.accessToken,
    });
    expect(again.body).toEqual({ revokedCount: 0 });
  });

  it('"sign out everywhere" takes the account off every other device’s list, until it signs in there again', async () => {
    const user = await createTestUser(service.service.db, { givenName: 'Ada' });
    const other = await client.login(user.email!, user.password);
    const current = await client.login(user.email!, user.password);
    const listed = async (deviceCookie: string) =>
      (
        await client.get<{ accounts: { firstName: string }[] }>('/auth/saved-accounts', {
          cookie: deviceCookie,
        })
      ).body.accounts.map((account) => account.firstName);
    expect(await listed(other.deviceCookie!)).toEqual(['Ada']);

    await client.post('/security/sessions/revoke-all', undefined, { token: current.accessToken });
    // A copy of the other device's cookie no longer shows the account (nor counts as the owner's device).
    expect(await listed(other.deviceCookie!)).toEqual([]);
    expect(await listed(current.deviceCookie!)).toEqual(['Ada']);
    await client.login(user.email!, user.password, { cookie: other.deviceCookie! });
    expect(await listed(other.deviceCookie!)).toEqual(['Ada']);
  });

  it('needs a main-auth access token: none, garbage and an OAuth token are refused', async () => {
    expect((await client.get('/security/sessions')).status).toBe(401);
    const garbage = await client.get('/security/sessions', { token: 'abc.def.ghi' });
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get('www-authenticate')).toContain('invalid_token');
    expect((await client.get('/auth/me', { token: 'abc' })).status).toBe(401);
  });

  it('keeps one device binding per browser and lists the accounts saved on it', async () => {
    const alice = await createTestUser(service.service.db, { givenName: 'Alice' });
    const bob = await createTestUser(service.service.db, { givenName: 'Bob' });
    const first = await client.login(alice.email!, alice.password);
    expect(first.deviceCookie).toBeDefined();
    const second = await client.login(bob.email!, bob.password, { cookie: first.deviceCookie! });
    // The known device cookie is kept, not replaced.
    expect(second.deviceCookie).toBeUndefined();
    const sessions = await service.service.db('sessions').whereIn('id', [first.sessionId, second.sessionId]);
    expect(new Set(sessions.map((session) => session.device_binding_id)).size).toBe(1);

    const saved = await client.get<{ accounts: { id: string; firstName: string }[] }>(
      '/auth/saved-accounts',
      {
        cookie: first.deviceCookie!,
      },
    );
    expect(saved.body.accounts.map((account) => account.firstName)).toEqual(['Bob', 'Alice']);
    const removed = await client.delete(`/auth/saved-accounts/${saved.body.accounts[0]!.id}`, {
      cookie: first.deviceCookie!,
    });
    expect(removed.status).toBe(200);
    const after = await client.get<{ accounts: { firstName: string }[] }>('/auth/saved-accounts', {
      cookie: first.deviceCookie!,
    });
    expect(after.body.accounts.map((account) => account.firstName)).toEqual(['Alice']);
    expect((await client.get<{ accounts: unknown[] }>('/auth/saved-accounts')).body.accounts).toEqual([]);
  });
});
