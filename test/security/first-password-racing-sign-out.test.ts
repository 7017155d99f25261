import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { revokeUserSessions } from '../../src/identity/sessions/sessions.js';
import {
  registerThroughPages as registerThroughPagesAs,
  useCodeOnlyFunnels,
} from '../identity/support/onboarding-pages.js';
import { createTestUser } from '../support/fixtures.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { hashingThatTakes } from '../support/hashing-that-takes.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * An account without a password gets its first one from the onboarding after a registration through
 * the pages (its cookie) or from the security settings (`POST /security/password`, a main-auth token of
 * a freshly authenticated session). Both looked, at the start of the request, whether the onboarding or
 * the session was live, then hashed the password (argon2: a second or so at production cost, and in
 * line behind the other checks of the client's own address, so as long as the client likes) and wrote
 * it without looking again. A thief holding a copy of the onboarding cookie or of the access token sent
 * the request, and the owner logged out (or signed out everywhere) while it was being hashed: the
 * password of the thief's choosing was written after the logout, and the account was theirs.
 */

let service: TestService;
beforeAll(async () => {
  // Hashing that takes about a second on any machine, so the owner's sign-out lands while it runs.
  service = await startTestService({
    env: { TRUST_PROXY: 'true' },
    settings: { passwordHashing: await hashingThatTakes(1000) },
  });
  await useCodeOnlyFunnels(service);
});
afterAll(() => service?.close());

const thiefPassword = 'a thief chose this passphrase';

/** The onboarding's password step posted with these cookies: its status. */
async function setPasswordWithCookie(cookie: string): Promise<number> {
  const response = await fetch(service.url('/en/auth/onboarding/password'), {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ password: thiefPassword, passwordConfirmation: thiefPassword }).toString(),
    redirect: 'manual',
  });
  await response.body?.cancel();
  return response.status;
}

/** `POST /security/password` with this token: its status. */
async function setPasswordWithToken(token: string): Promise<number> {
  const answer = await callIdentityApi(
    service,
    '/security/password',
    { newPassword: thiefPassword, newPasswordConfirmation: thiefPassword },
    { token },
  );
  return answer.status;
}

/** Sends the request, and signs the owner out while its password is being hashed. */
async function signedOutWhileHashing(request: Promise<number>, signOut: () => Promise<unknown>) {
  await sleep(250);
  await signOut();
  return request;
}

const signOutEverywhere = (userId: string) => () =>
  service.service.db.transaction((trx) =>
    revokeUserSessions(trx, userId, { reason: 'revoked_by_admin' }, service.service.clock.now()),
  );

describe('a first password being set as the owner signs out', () => {
  it('a copied onboarding cookie sets none once the owner logged out', async () => {
    const registered = await registerThroughPagesAs(service, 'first-password-race');
    const status = await signedOutWhileHashing(setPasswordWithCookie(registered.copied), () =>
      registered.browser.request(service.url('/api/v2/identity/auth/logout'), { method: 'POST' }),
    );
    expect(status).toBe(400);
    expect(await findPasswordHash(service.service.db, registered.userId)).toBeFalsy();
  });

  it('a copied onboarding cookie sets none once the account was signed out everywhere', async () => {
    const registered = await registerThroughPagesAs(service, 'first-password-race');
    const status = await signedOutWhileHashing(
      setPasswordWithCookie(registered.copied),
      signOutEverywhere(registered.userId),
    );
    expect(status).toBe(400);
    expect(await findPasswordHash(service.service.db, registered.userId)).toBeFalsy();
  });

  it('a copied access token sets none once its session was revoked', async () => {
    const user = await createTestUser(service.service.db, { password: null });
    const token = await mainAuthTokenFor(service, user.id);
    const [session] = await service.service.db('sessions').where({ user_id: user.id });
    const owner = await mainAuthTokenFor(service, user.id);
    const status = await signedOutWhileHashing(setPasswordWithToken(token), async () => {
      const revoked = await callIdentityApi(
        service,
        `/security/sessions/${session.id as string}`,
        undefined,
        {
          token: owner,
          method: 'DELETE',
        },
      );
      expect(revoked.status).toBe(200);
    });
    expect(status).toBe(401);
    expect(await findPasswordHash(service.service.db, user.id)).toBeFalsy();
  });

  it('a copied access token sets none once the account was signed out everywhere', async () => {
    const user = await createTestUser(service.service.db, { password: null });
    const token = await mainAuthTokenFor(service, user.id);
    const status = await signedOutWhileHashing(setPasswordWithToken(token), signOutEverywhere(user.id));
    expect(status).toBe(401);
    expect(await findPasswordHash(service.service.db, user.id)).toBeFalsy();
  });

  it('both still set it while nothing ends', async () => {
    const registered = await registerThroughPagesAs(service, 'first-password-race');
    expect(await setPasswordWithCookie(registered.copied)).toBe(303);
    expect(await findPasswordHash(service.service.db, registered.userId)).toBeTruthy();

    const user = await createTestUser(service.service.db, { password: null });
    expect(await setPasswordWithToken(await mainAuthTokenFor(service, user.id))).toBe(200);
    expect(await findPasswordHash(service.service.db, user.id)).toBeTruthy();
  });
});
