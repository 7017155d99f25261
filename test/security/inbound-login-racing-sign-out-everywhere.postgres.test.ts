import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeUserSessions } from '../../src/identity/sessions/sessions.js';
import { firstPartyClientWithUserToken, loginTokenFor } from '../oidc/support/inbound-login.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). An inbound-SSO login token redeemed while the user
 * is signed out everywhere (a password change or reset, "sign out everywhere", an administrator's
 * revocation or disable). The sign-out ends the user's sessions first, then the login tokens not yet
 * used; a redemption in flight had used its token and inserted its session, not yet committed, which
 * the first step could not see and the second waited for and skipped (used). The new session lived on,
 * with its refresh cookie for 30 days, after the account was signed out everywhere.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const identityApi = (path: string) => service.url(`/api/v2/identity${path}`);

async function redeem(loginToken: string, cookie?: string): Promise<Response> {
  return fetch(identityApi('/auth/inbound'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    body: JSON.stringify({ loginToken }),
  });
}

describe('an inbound login racing "sign out everywhere" on PostgreSQL', () => {
  it('leaves the user no live session', async () => {
    const { db } = service.service;
    const application = await firstPartyClientWithUserToken(service);
    const { user } = application;

    // A first inbound login gives the browser its device cookie (a device binding the test can hold).
    const first = await redeem(await loginTokenFor(service, application, application.accessToken));
    expect(first.status).toBe(200);
    const deviceCookie = first.headers
      .getSetCookie()
      .map((cookie) => cookie.split(';')[0]!)
      .find((cookie) => !cookie.startsWith('service_id_refresh_token='))!;
    const { sessionId } = (await first.json()) as { sessionId: string };
    const { device_binding_id: bindingId } = await db('sessions')
      .where({ id: sessionId })
      .first('device_binding_id');
    const loginToken = await loginTokenFor(service, application, application.accessToken);

    // The redemption has used its token and waits (on the device binding the test holds) before it
    // commits its session when the sign-out everywhere starts.
    let redeemed!: Promise<Response>;
    let signedOut!: Promise<number>;
    await db.transaction(async (trx) => {
      await trx('device_bindings').where({ id: bindingId }).forUpdate().first('id');
      redeemed = redeem(loginToken, deviceCookie);
      await untilWaitingForLocks(service.service.db, 1);
      signedOut = db.transaction((other) =>
        revokeUserSessions(other, user.id, { reason: 'revoked_by_admin' }, new Date()),
      );
      await untilWaitingForLocks(service.service.db, 2);
    });
    const [answer] = await Promise.all([redeemed, signedOut]);
    expect([200, 401]).toContain(answer.status);

    const live = await db('sessions').where({ user_id: user.id, is_revoked: false });
    expect(live).toHaveLength(0);
  });
});
