import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSession } from '../../src/identity/sessions/sessions.js';
import { IdentityClient } from '../identity/support/identity-client.js';
import { totpCode } from '../identity/support/totp-codes.js';
import { createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { silentAuthorization } from '../support/relying-party.js';
import { signInToNewApplication } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A thief who signed in through the owner's account at a third-party provider (or with a TOTP secret
 * that leaked) kept that session when the owner removed the method: unlinking the provider or removing
 * TOTP ended nothing, and the thief's session, its refresh cookie and its sign-ins to applications
 * lived on for 30 days. Removing a sign-in method now signs out everywhere but the session making the
 * change, as a password change does (ASVS 5 7.4.3).
 */

let service: TestService;
let identity: IdentityClient;
beforeAll(async () => {
  service = await startTestService();
  identity = new IdentityClient(service);
});
afterAll(() => service?.close());

const db = () => service.service.db;

/** The thief's main-auth session, started through the provider ('fed'), and a browser signed in to an application. */
async function thiefSignedIn(user: Awaited<ReturnType<typeof createTestUser>>) {
  const session = await insertSession(
    db(),
    {
      id: crypto.randomUUID(),
      refreshTokenId: crypto.randomUUID(),
      userId: user.id,
      userAgent: 'thief',
      ipAddress: '203.0.113.9',
      browserName: '',
      authMethod: 'fed',
    },
    service.service.clock.now(),
  );
  const browser = new HttpBrowser(service.issuer);
  const application = await signInToNewApplication(service, browser, user);
  return { sessionId: session.id, browser, application };
}

const isRevoked = async (sessionId: string) =>
  ((await db()('sessions').where({ id: sessionId }).first('is_revoked')) as { is_revoked: boolean })
    .is_revoked;

describe('removing a sign-in method signs out everywhere else', () => {
  it('unlinking a third-party provider', async () => {
    const user = await createTestUser(db());
    const [link] = (await db()('user_auth_methods')
      .insert({
        user_id: user.id,
        type: 'oauth_provider',
        provider: 'upstream',
        external_subject: `upstream-${crypto.randomUUID()}`,
        is_enabled: true,
        is_verified: true,
      })
      .returning('id')) as { id: string }[];
    const thief = await thiefSignedIn(user);
    const owner = await identity.login(user.email!, user.password);

    const unlinked = await identity.delete(`/security/linked-providers/${link!.id}`, {
      token: owner.accessToken,
    });
    expect(unlinked.status).toBe(200);

    expect(await isRevoked(thief.sessionId)).toBe(true);
    expect(await silentAuthorization(thief.application.config, thief.browser)).toEqual({
      code: null,
      error: 'login_required',
    });
    // The session that made the change stays.
    expect((await identity.get('/security/sessions', { token: owner.accessToken })).status).toBe(200);
  });

  it('removing TOTP', async () => {
    const user = await createTestUser(db());
    const thief = await thiefSignedIn(user);
    const owner = await identity.login(user.email!, user.password);
    const token = owner.accessToken;
    const setup = await identity.post<{ secret: string }>('/security/auth-methods/totp/setup', undefined, {
      token,
    });
    const code = await totpCode(setup.body.secret, service.service.clock.now());
    expect((await identity.post('/security/auth-methods/totp/verify', { code }, { token })).status).toBe(200);

    expect((await identity.delete('/security/auth-methods/totp', { token })).status).toBe(200);

    expect(await isRevoked(thief.sessionId)).toBe(true);
    expect(await silentAuthorization(thief.application.config, thief.browser)).toEqual({
      code: null,
      error: 'login_required',
    });
    expect((await identity.get('/security/sessions', { token })).status).toBe(200);
  });
});
