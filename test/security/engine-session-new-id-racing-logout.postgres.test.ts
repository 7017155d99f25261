import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endBrowserSignInOf } from '../../src/oidc/models/user-sign-ins.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser, type Page } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc, silentAuthorization } from '../support/relying-party.js';
import { signInToNewApplication } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';

/**
 * The engine saves its session at the end of a request, and a browser back from the sign-in pages (a
 * consent) gets it under a new id. A saved session that ended meanwhile stays ended (engine-sessions.ts)
 * but the new id was a new row: a thief holding a copy of the engine's cookie, whose return from the
 * pages was in flight when the owner logged out (a copy sent in a loop is in flight at every moment),
 * saved the ended session back to life under the new id, with the code that request issued. Now the
 * old id ends in the statement that saves the new one, which is live only if the old one still was.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const engineSessionIdOf = (browser: HttpBrowser) =>
  browser.cookieHeader(new URL(service.url('/oauth/authorize'))).match(/(?:^|; )_session=([^;]+)/)![1]!;

describe('a return from the sign-in pages racing the owner’s logout on PostgreSQL', () => {
  it('saves no live session under the new id, and its code is refused', async () => {
    const { db } = service.service;
    const user = await createTestUser(db);
    const owner = new HttpBrowser(service.issuer);
    const application = await signInToNewApplication(service, owner, user);
    const sessionId = engineSessionIdOf(owner);

    // The thief, with a copy of the cookie, consents to another application: the browser is sent on
    // to the engine's resume, which gives the session a new id.
    const thief = owner.copy();
    const { client } = await createTestClient(db, { name: 'Another application' });
    const another = await discover(service.issuer, client.clientId);
    const request = await buildAuthorizationRequest(another);
    const consent = await thief.navigate(request.url.toString());
    expect(consent.html).toContain('name="decision"');
    const { location: resumeUrl } = await thief.submitWithoutFollowing(consent, { decision: 'allow' });

    // The resume runs while the owner's logout holds the session's row: it read the session, live,
    // and saves it after the logout ended it.
    let resumed!: Promise<Page>;
    await db.transaction(async (trx) => {
      await trx('oidc_payloads').where({ model: 'Session', id: sessionId }).forUpdate().first('id');
      resumed = thief.request(resumeUrl);
      await untilWaitingForLocks(service.service.db);
      expect(await endBrowserSignInOf(trx, user.id, sessionId, new Date())).toBe(true);
    });
    const callback = new URL((await resumed).url);

    // Nothing of it lives: no silent sign-in in the thief's browser, and the code is refused.
    expect(await silentAuthorization(application.config, thief)).toEqual({
      code: null,
      error: 'login_required',
    });
    expect(callback.searchParams.get('code')).toEqual(expect.any(String));
    await expect(
      oidc.authorizationCodeGrant(another, callback, {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});
