import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { callIdentityApi, mainAuthTokenFor } from '../support/identity-api-client.js';
import { completeAuthorization, oidc, silentAuthorization } from '../support/relying-party.js';
import { signInToNewApplication } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The security settings list the user's sign-ins through the OIDC pages (the engine's sessions, one per
 * browser) with the applications signed in to in each, and end one of them: that browser is signed out
 * of the applications and the grants issued in it are revoked (ASVS 5 V7.5).
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

interface AppSignIn {
  id: string;
  signedInAt: string;
  applications: { clientId: string; name: string }[];
}

async function listAppSignIns(token: string): Promise<AppSignIn[]> {
  const answer = await callIdentityApi(service, '/security/app-sign-ins', undefined, { token });
  expect(answer.status).toBe(200);
  expect(answer.headers.get('cache-control')).toBe('no-store');
  return (answer.body as { items: AppSignIn[] }).items;
}

const endAppSignIn = (token: string, id: string) =>
  callIdentityApi(service, `/security/app-sign-ins/${encodeURIComponent(id)}`, undefined, {
    token,
    method: 'DELETE',
  });

const uniqueName = (label: string) => `${label} ${crypto.randomUUID().slice(0, 8)}`;

describe('the security settings: sign-ins to applications through the OIDC pages', () => {
  it('lists the live sign-ins of the user with the applications of each, and no one else’s', async () => {
    const user = await createTestUser(service.service.db);
    const stranger = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const before = new Date(Date.now() - 1000);
    const calendar = await signInToNewApplication(service, browser, user, uniqueName('Calendar'));
    const notes = await signInToNewApplication(service, browser, user, uniqueName('Notes'));
    // The stranger, signed in to the same application in a browser of their own.
    await completeAuthorization(calendar.config, new HttpBrowser(service.issuer), {
      identifier: stranger.email!,
      password: stranger.password,
    });

    const token = await mainAuthTokenFor(service, user.id);
    const items = await listAppSignIns(token);
    expect(items).toHaveLength(1);
    const [signIn] = items;
    expect(signIn!.id).toEqual(expect.any(String));
    expect(new Date(signIn!.signedInAt).getTime()).toBeGreaterThanOrEqual(
      Math.floor(before.getTime() / 1000) * 1000,
    );
    expect(new Date(signIn!.signedInAt).getTime()).toBeLessThanOrEqual(Date.now());
    expect(signIn!.applications).toEqual(
      expect.arrayContaining([
        { clientId: calendar.clientId, name: expect.stringMatching(/^Calendar /) },
        { clientId: notes.clientId, name: expect.stringMatching(/^Notes /) },
      ]),
    );
    expect(signIn!.applications).toHaveLength(2);

    const strangers = await listAppSignIns(await mainAuthTokenFor(service, stranger.id));
    expect(strangers).toHaveLength(1);
    expect(strangers[0]!.id).not.toBe(signIn!.id);
    expect(strangers[0]!.applications).toEqual([
      { clientId: calendar.clientId, name: expect.stringMatching(/^Calendar /) },
    ]);
  });

  it('ends one sign-in: that browser gets login_required, the refresh token invalid_grant', async () => {
    const user = await createTestUser(service.service.db);
    const browser = new HttpBrowser(service.issuer);
    const elsewhere = new HttpBrowser(service.issuer);
    const application = await signInToNewApplication(service, browser, user, uniqueName('Calendar'));
    const token = await mainAuthTokenFor(service, user.id);
    const [signIn] = await listAppSignIns(token);
    // The same user in another browser: a sign-in of its own, which stays.
    const other = await completeAuthorization(application.config, elsewhere, {
      identifier: user.email!,
      password: user.password,
      consent: 'expect-none',
    });
    expect(await listAppSignIns(token)).toHaveLength(2);
    expect(await silentAuthorization(application.config, browser)).toMatchObject({
      code: expect.any(String),
    });

    const ended = await endAppSignIn(token, signIn!.id);
    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ ended: true });
    const endedId = signIn!.id;

    expect(await silentAuthorization(application.config, browser)).toEqual({
      code: null,
      error: 'login_required',
    });
    await expect(
      oidc.refreshTokenGrant(application.config, application.tokens.refresh_token!),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
    // The other browser's sign-in stays, and its refresh token with it.
    expect(await silentAuthorization(application.config, elsewhere)).toMatchObject({
      code: expect.any(String),
    });
    const refreshed = await oidc.refreshTokenGrant(application.config, other.tokens.refresh_token!);
    expect(refreshed.access_token).toEqual(expect.any(String));
    expect((await listAppSignIns(token)).map((item) => item.id)).not.toContain(endedId);

    // Audited as a revocation the user asked for.
    const events = await listAuditEvents(service.service.db, {
      userId: user.id,
      type: 'identity.session.revoked',
    });
    expect(events.map((event) => event.details)).toContainEqual(
      expect.objectContaining({ appSignInIds: [endedId], reason: 'revoked_by_user' }),
    );

    // Again: it is no live sign-in any more.
    const again = await endAppSignIn(token, endedId);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ error: 'not_found' });
  });

  it('answers 404 for an unknown id or another user’s sign-in, and ends nothing', async () => {
    const user = await createTestUser(service.service.db);
    const stranger = await createTestUser(service.service.db);
    const strangersBrowser = new HttpBrowser(service.issuer);
    const application = await signInToNewApplication(
      service,
      strangersBrowser,
      stranger,
      uniqueName('Calendar'),
    );
    const [strangersSignIn] = await listAppSignIns(await mainAuthTokenFor(service, stranger.id));

    const token = await mainAuthTokenFor(service, user.id);
    for (const id of [strangersSignIn!.id, 'no-such-sign-in', crypto.randomUUID()]) {
      const answer = await endAppSignIn(token, id);
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ error: 'not_found' });
    }
    expect(await silentAuthorization(application.config, strangersBrowser)).toMatchObject({
      code: expect.any(String),
    });
    const refreshed = await oidc.refreshTokenGrant(application.config, application.tokens.refresh_token!);
    expect(refreshed.access_token).toEqual(expect.any(String));
  });

  it('needs a main-auth token of a live session', async () => {
    expect((await callIdentityApi(service, '/security/app-sign-ins')).status).toBe(401);
    expect(
      (await callIdentityApi(service, '/security/app-sign-ins/x', undefined, { method: 'DELETE' })).status,
    ).toBe(401);
  });
});
