import crypto from 'node:crypto';
import { SignJWT, UnsecuredJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { buildAuthorizationRequest, completeAuthorization, oidc } from '../support/relying-party.js';
import {
  authorizeTwiceWithoutRefreshTokens,
  signInToNewApplication,
  userWithTokens,
} from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const signedOutUri = 'http://localhost:8080/signed-out';

function endSessionUrl(parameters: Record<string, string>): string {
  return `${service.url('/oauth/end_session')}?${new URLSearchParams(parameters)}`;
}

async function activeRefreshTokens(userId: string, clientId: string): Promise<number> {
  const rows = await service.service
    .db('oauth_refresh_tokens')
    .where({ user_id: userId, client_id: clientId })
    .whereNull('revoked_at');
  return rows.length;
}

describe('GET /oauth/end_session over HTTP', () => {
  it('revokes every refresh token of that user and client, from every authorization', async () => {
    const first = await userWithTokens(service);
    // A second authorization of the same user and client, in another browser.
    const second = await completeAuthorization(first.config, new HttpBrowser(service.issuer), {
      identifier: first.user.email!,
      password: first.user.password,
      consent: 'expect-none',
    });
    expect(await activeRefreshTokens(first.user.id, first.client.clientId)).toBe(2);
    const page = await first.browser.navigate(
      endSessionUrl({
        id_token_hint: first.tokens.id_token!,
        post_logout_redirect_uri: signedOutUri,
        state: 'bye',
      }),
    );
    expect(new URL(page.url).pathname).toBe('/en/auth/single-logout');
    expect(await activeRefreshTokens(first.user.id, first.client.clientId)).toBe(0);
    await expect(oidc.refreshTokenGrant(first.config, second.tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('confirmed without a hint, revokes the grants of that browser’s sign-in, of every application', async () => {
    const first = await userWithTokens(service);
    const { user } = first;
    // A second application signed in to in the same browser, and the first one in another browser.
    const second = await signInToNewApplication(service, first.browser, user);
    const elsewhere = await completeAuthorization(first.config, new HttpBrowser(service.issuer), {
      identifier: user.email!,
      password: user.password,
      consent: 'expect-none',
    });

    const page = await first.browser.navigate(endSessionUrl({ client_id: first.client.clientId }));
    expect(new URL(page.url).pathname).toBe('/en/auth/single-logout');
    expect((await first.browser.submit(page, {})).status).toBe(200);

    for (const [config, tokens] of [
      [first.config, first.tokens],
      [second.config, second.tokens],
    ] as const) {
      await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
        error: 'invalid_grant',
      });
    }
    const stillSignedIn = await oidc.refreshTokenGrant(first.config, elsewhere.tokens.refresh_token!);
    expect(stillSignedIn.access_token).toEqual(expect.any(String));
  });

  it('confirmed, ends the access tokens of every authorization in that browser, refresh tokens or not', async () => {
    const browser = new HttpBrowser(service.issuer);
    // The second authorization is the one the engine session names; the first is no less this browser's.
    const { clientId, first, again } = await authorizeTwiceWithoutRefreshTokens(service, browser);
    const userinfo = (accessToken: string) =>
      fetch(service.url('/oauth/userinfo'), { headers: { authorization: `Bearer ${accessToken}` } });
    expect((await userinfo(first)).status).toBe(200);

    const page = await browser.navigate(endSessionUrl({ client_id: clientId }));
    expect((await browser.submit(page, {})).status).toBe(200);
    expect((await userinfo(first)).status).toBe(401);
    expect((await userinfo(again)).status).toBe(401);
  });

  it('renders an error page, without redirecting, for a post_logout_redirect_uri not in the client list', async () => {
    const { tokens } = await userWithTokens(service);
    const response = await fetch(
      endSessionUrl({
        id_token_hint: tokens.id_token!,
        post_logout_redirect_uri: 'https://evil.example.com/',
      }),
      { redirect: 'manual' },
    );
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('post_logout_redirect_uri not registered');
  });

  it('refuses an id_token_hint signed by another key, or forged with alg none, and revokes nothing', async () => {
    const { user, client, tokens } = await userWithTokens(service);
    const claims = decodeJwt(tokens.id_token!);
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const foreign = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: service.service.keys.oidc.kid })
      .sign(privateKey);
    const unsigned = new UnsecuredJWT(claims).encode();
    for (const hint of [foreign, unsigned, 'not.a.jwt']) {
      const response = await fetch(
        endSessionUrl({ id_token_hint: hint, post_logout_redirect_uri: signedOutUri }),
        {
          redirect: 'manual',
        },
      );
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(await response.text()).toContain('id_token_hint is not valid');
    }
    expect(await activeRefreshTokens(user.id, client.clientId)).toBe(1);
  });

  it('refuses an id_token_hint of one client with the client_id of another', async () => {
    const { tokens } = await userWithTokens(service);
    const { client: other } = await createTestClient(service.service.db);
    const response = await fetch(
      endSessionUrl({ id_token_hint: tokens.id_token!, client_id: other.clientId }),
      {
        redirect: 'manual',
      },
    );
    expect(response.status).toBe(400);
  });
});

describe('an id_token_hint that is no ID token', () => {
  /** Whether the browser's engine session is still signed in: prompt=none gets a code, not login_required. */
  async function stillSignedIn(signed: Awaited<ReturnType<typeof userWithTokens>>): Promise<boolean> {
    const request = await buildAuthorizationRequest(signed.config, { prompt: 'none' });
    const page = await signed.browser.navigate(request.url.toString());
    return new URL(page.url).searchParams.has('code');
  }

  /** Our own token signed with the OIDC key: the claims of the user's ID token under another `typ`. */
  async function signedWithOurKey(idToken: string, typ: string): Promise<string> {
    return new SignJWT(decodeJwt(idToken))
      .setProtectedHeader({ alg: 'RS256', typ, kid: service.service.keys.oidc.kid })
      .sign(service.service.keys.oidc.privateKey);
  }

  it('refuses the user’s access token (typ at+jwt) by GET and POST, and revokes and ends nothing', async () => {
    const signed = await userWithTokens(service);
    const { config, tokens, browser } = signed;
    expect(decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');
    const forLogout = { post_logout_redirect_uri: signedOutUri, state: 'bye' };
    const accessTokenHints = [
      tokens.access_token,
      // an access token carrying the client as its audience, as an ID token does
      await signedWithOurKey(tokens.id_token!, 'at+jwt'),
    ];
    for (const hint of accessTokenHints) {
      const byGet = await browser.navigate(
        oidc.buildEndSessionUrl(config, { id_token_hint: hint, ...forLogout }).toString(),
      );
      const byPost = await browser.request(service.url('/oauth/end_session'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ id_token_hint: hint, ...forLogout }).toString(),
      });
      for (const page of [byGet, byPost]) {
        expect(page.status).toBe(400);
        expect(new URL(page.url).pathname).toBe('/oauth/end_session');
        expect(page.html).toContain('invalid_request');
        expect(page.html).toContain('id_token_hint is not valid');
      }
    }
    expect(await activeRefreshTokens(signed.user.id, signed.client.clientId)).toBe(1);
    expect(await stillSignedIn(signed)).toBe(true);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);

    // A real ID token, with no typ or typ JWT, still logs out.
    const idTokenHints = [tokens.id_token!, await signedWithOurKey(tokens.id_token!, 'JWT')];
    for (const hint of idTokenHints) {
      const page = await browser.navigate(
        oidc.buildEndSessionUrl(config, { id_token_hint: hint, ...forLogout }).toString(),
      );
      expect(new URL(page.url).pathname).toBe('/en/auth/single-logout');
    }
    expect(await activeRefreshTokens(signed.user.id, signed.client.clientId)).toBe(0);
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });
});

describe('engine sessions', () => {
  const days = 24 * 3600 * 1000;
  const expiresIn = async (where: Record<string, string>) => {
    const row = await service.service
      .db('oidc_payloads')
      .where({ model: 'Session', ...where })
      .whereNull('ended_at') // a session given a new id at sign-in leaves its old id ended, for an hour
      .first();
    return new Date(row.expires_at).getTime() - Date.now();
  };

  it('keeps the one a logout page opened without a sign-in for an hour, a signed-in one 30 days', async () => {
    // Any GET of the logout page stores a session (the form's secret): no rows for a month at will.
    const page = await fetch(service.url('/oauth/end_session'));
    expect(page.status).toBe(200);
    const id = /(?:^|\s)_session=([^;]+)/.exec(page.headers.getSetCookie().join('\n'))?.[1];
    expect(id).toBeDefined();
    expect(await expiresIn({ id: id! })).toBeLessThanOrEqual(3600 * 1000);

    const { user } = await userWithTokens(service);
    expect(await expiresIn({ account_id: user.id })).toBeGreaterThan(29 * days);
  });
});
