import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser, uniqueEmail } from '../../support/fixtures.js';
import { HttpBrowser, pageText, type Page } from '../../support/http-browser.js';
import {
  buildAuthorizationRequest,
  discover,
  oidc,
  type AuthorizationRequest,
} from '../../support/relying-party.js';
import { startTestService, type TestService } from '../../support/test-service.js';
import { IdentityClient } from '../support/identity-client.js';
import { freePort } from '../../support/free-port.js';
import {
  startUpstreamProvider,
  type UpstreamAccount,
  type UpstreamProvider,
  type UpstreamScript,
} from '../../support/upstream-provider.js';

let service: TestService;
let upstream: UpstreamProvider;
let forged: UpstreamProvider;
let rp: oidc.Configuration;
let identity: IdentityClient;

beforeAll(async () => {
  const port = await freePort();
  const callback = (id: string) => `http://127.0.0.1:${port}/oauth/providers/${id}/callback`;
  upstream = await startUpstreamProvider({ redirectUri: callback('upstream') });
  forged = await startUpstreamProvider({ redirectUri: callback('forged'), forgeJwks: true });
  const providerConfig = (id: string, at: UpstreamProvider) => ({
    id,
    name: id === 'upstream' ? 'Upstream ID' : 'Forged ID',
    issuer: at.issuer,
    clientId: at.clientId,
    clientSecret: at.clientSecret,
    scopes: ['openid', 'email', 'phone', 'profile'],
  });
  service = await startTestService({
    port,
    oauthProviders: [providerConfig('upstream', upstream), providerConfig('forged', forged)],
  });
  const { client } = await createTestClient(service.service.db);
  rp = await discover(service.issuer, client.clientId);
  identity = new IdentityClient(service);
});
afterAll(async () => {
  await service?.close();
  await upstream?.close();
  await forged?.close();
});

const db = () => service.service.db;
const decode = (value: string) => value.replace(/&amp;/g, '&');

function newUpstreamAccount(at: UpstreamProvider, claims: Partial<UpstreamAccount> = {}): UpstreamAccount {
  return at.addAccount({
    sub: `upstream-${crypto.randomBytes(6).toString('hex')}`,
    email: uniqueEmail('federated'),
    email_verified: true,
    given_name: 'Ada',
    family_name: 'Lovelace',
    ...claims,
  });
}

interface UpstreamRound {
  browser: HttpBrowser;
  request: AuthorizationRequest;
  /** Where the upstream sent the browser back to (our callback). */
  callbackUrl: string;
}

/** Opens the login page of an authorization request and follows the provider's button to the upstream and back. */
async function throughUpstream(
  script: UpstreamScript,
  options: { providerId?: string; at?: UpstreamProvider; browser?: HttpBrowser } = {},
): Promise<UpstreamRound> {
  const { providerId = 'upstream', at = upstream } = options;
  const browser = options.browser ?? new HttpBrowser(service.issuer);
  const request = await buildAuthorizationRequest(rp);
  const login = await browser.navigate(request.url.toString());
  const href = new RegExp(`data-provider="${providerId}" href="([^"]+)"`).exec(login.html)?.[1];
  if (!href) throw new Error(`no ${providerId} button on the login page:\n${login.html}`);
  at.script(script);
  const toUpstream = await browser.navigate(decode(href));
  expect(toUpstream.url.startsWith(at.issuer)).toBe(true);
  const back = await new HttpBrowser(at.issuer).navigate(toUpstream.url);
  expect(back.url.startsWith(`${service.issuer}/oauth/providers/${providerId}/callback`)).toBe(true);
  return { browser, request, callbackUrl: back.url };
}

/** From a page of our service to the tokens the downstream client receives (consent allowed on the way). */
async function tokensFrom(page: Page, round: UpstreamRound) {
  let current = page;
  if (current.html.includes('name="decision"') && current.html.includes('value="allow"')) {
    current = await round.browser.submit(current, { decision: 'allow' });
  }
  expect(current.url.startsWith('http://localhost:8080/callback')).toBe(true);
  return oidc.authorizationCodeGrant(rp, new URL(current.url), {
    pkceCodeVerifier: round.request.codeVerifier,
    expectedState: round.request.state,
    expectedNonce: round.request.nonce,
  });
}

async function linkedMethods(subject: string) {
  return db()('user_auth_methods').where({ type: 'oauth_provider', external_subject: subject });
}

async function userByEmail(email: string) {
  return db()('users').where({ email }).first();
}

describe('sign-in through a third-party OpenID Connect provider', () => {
  it('shows the provider’s button on the login page', async () => {
    const browser = new HttpBrowser(service.issuer);
    const page = await browser.navigate((await buildAuthorizationRequest(rp)).url.toString());
    expect(pageText(page, 'third-party-sign-in')).toBe('');
    expect(page.html).toContain('Sign in with Upstream ID');
  });

  it('no matching account: creates one with the provider as its verified method and no password', async () => {
    const account = newUpstreamAccount(upstream);
    const round = await throughUpstream({ account: account.sub });
    const tokens = await tokensFrom(await round.browser.navigate(round.callbackUrl), round);

    const user = await userByEmail(account.email!);
    expect(user).toMatchObject({ email_verified: true, given_name: 'Ada', family_name: 'Lovelace' });
    expect(tokens.claims()!.sub).toBe(user.id);
    const [method] = await linkedMethods(account.sub);
    expect(method).toMatchObject({
      user_id: user.id,
      provider: 'upstream',
      is_verified: true,
      is_enabled: true,
    });
    expect(await db()('user_credentials').where({ user_id: user.id })).toEqual([]);

    // The next sign-in finds the same account through the provider's subject.
    const again = await throughUpstream({ account: account.sub });
    const second = await tokensFrom(await again.browser.navigate(again.callbackUrl), again);
    expect(second.claims()!.sub).toBe(user.id);
    expect(await db()('users').where({ email: account.email })).toHaveLength(1);
  });

  it('a name longer than we keep (or carrying a NUL) is left out: the account is made, not a 500', async () => {
    const account = newUpstreamAccount(upstream, {
      given_name: 'A'.repeat(101),
      family_name: 'Love\u0000lace',
    });
    const round = await throughUpstream({ account: account.sub });
    const tokens = await tokensFrom(await round.browser.navigate(round.callbackUrl), round);
    const user = await userByEmail(account.email!);
    expect(user).toMatchObject({ given_name: null, family_name: null });
    expect(tokens.claims()!.sub).toBe(user.id);
    // A hundred characters (as PostgreSQL counts them: an emoji is one) are kept.
    const hundred = '😀'.repeat(100);
    const next = newUpstreamAccount(upstream, { given_name: hundred });
    const again = await throughUpstream({ account: next.sub });
    await tokensFrom(await again.browser.navigate(again.callbackUrl), again);
    expect(await userByEmail(next.email!)).toMatchObject({ given_name: hundred, family_name: 'Lovelace' });
  });

  it('email_verified true and an account with that email: links the provider to it', async () => {
    const existing = await createTestUser(db());
    const account = newUpstreamAccount(upstream, { email: existing.email!, email_verified: true });
    const round = await throughUpstream({ account: account.sub });
    const tokens = await tokensFrom(await round.browser.navigate(round.callbackUrl), round);
    expect(tokens.claims()!.sub).toBe(existing.id);
    expect(await linkedMethods(account.sub)).toMatchObject([{ user_id: existing.id }]);
  });

  it('an address only userinfo names is verified by userinfo alone, not by the ID token’s flag', async () => {
    // The ID token vouches for the person's own address; userinfo names the victim's and says nothing.
    const victim = await createTestUser(db());
    const account = newUpstreamAccount(upstream, {
      email_verified: true,
      userinfo: { email: victim.email! },
    });
    const round = await throughUpstream({ account: account.sub });
    const confirm = await round.browser.navigate(round.callbackUrl);
    expect(pageText(confirm, 'link-explanation')).toContain(victim.email!);
    expect(await linkedMethods(account.sub)).toEqual([]);

    // The same address in both, vouched for by the ID token alone: linked as before.
    const existing = await createTestUser(db());
    const same = newUpstreamAccount(upstream, {
      email: existing.email!,
      email_verified: true,
      userinfo: { email: existing.email!, given_name: 'Ada' },
    });
    const again = await throughUpstream({ account: same.sub });
    const tokens = await tokensFrom(await again.browser.navigate(again.callbackUrl), again);
    expect(tokens.claims()!.sub).toBe(existing.id);
  });

  it('a verified phone number matches an account too', async () => {
    const phone = `+1555${crypto.randomInt(1_000_000, 9_999_999)}`;
    const existing = await createTestUser(db(), { phone, phoneVerified: true });
    const account = newUpstreamAccount(upstream, {
      email: uniqueEmail('other'),
      email_verified: false,
      phone_number: phone,
      phone_number_verified: true,
    });
    const round = await throughUpstream({ account: account.sub });
    const tokens = await tokensFrom(await round.browser.navigate(round.callbackUrl), round);
    expect(tokens.claims()!.sub).toBe(existing.id);
  });

  it('a verified number with an extension matches no account: the switchboard is not the person', async () => {
    const switchboard = `+1650253${crypto.randomInt(1000, 9999)}`;
    const existing = await createTestUser(db(), { phone: switchboard, phoneVerified: true });
    const account = newUpstreamAccount(upstream, {
      email: uniqueEmail('extension'),
      email_verified: false,
      phone_number: `${switchboard} ext. 89`,
      phone_number_verified: true,
    });
    const round = await throughUpstream({ account: account.sub });
    const tokens = await tokensFrom(await round.browser.navigate(round.callbackUrl), round);
    expect(tokens.claims()!.sub).not.toBe(existing.id);
    const [linked] = await linkedMethods(account.sub);
    expect(linked.user_id).not.toBe(existing.id);
    expect(await db()('users').where({ id: linked.user_id }).first('phone')).toEqual({ phone: null });
  });

  it('an account with an authenticator app is not signed in to through a provider (its second factor would be skipped)', async () => {
    const existing = await createTestUser(db());
    await db()('user_auth_methods').insert({
      user_id: existing.id,
      type: 'totp',
      is_enabled: true,
      is_verified: true,
    });
    const account = newUpstreamAccount(upstream, { email: existing.email!, email_verified: true });
    const round = await throughUpstream({ account: account.sub });
    const page = await round.browser.navigate(round.callbackUrl);
    expect(pageText(page, 'error-code')).toBe('second_factor_required');
    expect(await linkedMethods(account.sub)).toEqual([]);
  });

  it('email_verified false: a confirmation screen; the link is made only once the person signs in and agreed', async () => {
    const existing = await createTestUser(db());
    const account = newUpstreamAccount(upstream, { email: existing.email!, email_verified: false });
    const round = await throughUpstream({ account: account.sub });
    const confirm = await round.browser.navigate(round.callbackUrl);
    expect(confirm.status).toBe(200);
    expect(pageText(confirm, 'link-explanation')).toContain(existing.email!);
    expect(await linkedMethods(account.sub)).toEqual([]);

    const login = await round.browser.submit(confirm, { decision: 'link' });
    expect(login.html).toContain('name="identifier"');
    expect(await linkedMethods(account.sub)).toEqual([]);
    const password = await round.browser.submit(login, { identifier: existing.email! });
    const signedIn = await round.browser.submit(password, { password: existing.password });
    const tokens = await tokensFrom(signedIn, round);
    expect(tokens.claims()!.sub).toBe(existing.id);
    expect(await linkedMethods(account.sub)).toMatchObject([{ user_id: existing.id }]);
  });

  it('an agreed link is made only to the account it named: signing in to another links nothing', async () => {
    const named = await createTestUser(db());
    const other = await createTestUser(db());
    const account = newUpstreamAccount(upstream, { email: named.email!, email_verified: false });
    const round = await throughUpstream({ account: account.sub });
    const confirm = await round.browser.navigate(round.callbackUrl);
    const login = await round.browser.submit(confirm, { decision: 'link' });
    const password = await round.browser.submit(login, { identifier: other.email! });
    const tokens = await tokensFrom(
      await round.browser.submit(password, { password: other.password }),
      round,
    );
    expect(tokens.claims()!.sub).toBe(other.id);
    expect(await linkedMethods(account.sub)).toEqual([]);
  });

  it('the person who does not agree signs in without a link', async () => {
    const existing = await createTestUser(db());
    const account = newUpstreamAccount(upstream, { email: existing.email!, email_verified: false });
    const round = await throughUpstream({ account: account.sub });
    const confirm = await round.browser.navigate(round.callbackUrl);
    const login = await round.browser.submit(confirm, { decision: 'cancel' });
    const password = await round.browser.submit(login, { identifier: existing.email! });
    await tokensFrom(await round.browser.submit(password, { password: existing.password }), round);
    expect(await linkedMethods(account.sub)).toEqual([]);
  });

  it('refuses to link a provider account that is linked to another account meanwhile', async () => {
    const owner = await createTestUser(db());
    const other = await createTestUser(db());
    const account = newUpstreamAccount(upstream, { email: other.email!, email_verified: false });
    const round = await throughUpstream({ account: account.sub });
    const confirm = await round.browser.navigate(round.callbackUrl);
    const login = await round.browser.submit(confirm, { decision: 'link' });
    await db()('user_auth_methods').insert({
      user_id: owner.id,
      type: 'oauth_provider',
      provider: 'upstream',
      external_subject: account.sub,
      is_enabled: true,
      is_verified: true,
    });
    const password = await round.browser.submit(login, { identifier: other.email! });
    const refused = await round.browser.submit(password, { password: other.password });
    expect(refused.status).toBe(400);
    expect(pageText(refused, 'error-code')).toBe('subject_linked_elsewhere');
    expect(pageText(refused, 'error-description')).toContain('already linked to another account');
    expect(await linkedMethods(account.sub)).toMatchObject([{ user_id: owner.id }]);
  });
});

describe('upstream errors: a clear page, nothing written', () => {
  async function expectNothingWritten(account: UpstreamAccount) {
    expect(await userByEmail(account.email!)).toBeUndefined();
    expect(await linkedMethods(account.sub)).toEqual([]);
  }

  it('the person declines at the provider', async () => {
    const account = newUpstreamAccount(upstream);
    const round = await throughUpstream({ deny: true });
    const page = await round.browser.navigate(round.callbackUrl);
    expect(page.status).toBe(400);
    expect(pageText(page, 'error-code')).toBe('denied');
    expect(pageText(page, 'error-description')).toContain(
      'You declined to share your account at Upstream ID',
    );
    await expectNothingWritten(account);
  });

  it('a subject longer than we keep: the page of a provider that did not say who you are, not a 500', async () => {
    const account = newUpstreamAccount(upstream, { sub: `upstream-${'s'.repeat(256)}` });
    const round = await throughUpstream({ account: account.sub });
    const page = await round.browser.navigate(round.callbackUrl);
    expect(page.status).toBe(400);
    expect(pageText(page, 'error-code')).toBe('missing_subject');
    await expectNothingWritten(account);
  });

  it('an answer whose state is not the one this browser sent', async () => {
    const account = newUpstreamAccount(upstream);
    const round = await throughUpstream({ account: account.sub });
    const forgedState = new URL(round.callbackUrl);
    forgedState.searchParams.set('state', 'a-state-of-another-sign-in');
    const page = await round.browser.navigate(forgedState.toString());
    expect(pageText(page, 'error-code')).toBe('bad_state');
    await expectNothingWritten(account);
    // The attempt was used up: the genuine answer arriving afterwards is refused too.
    const replay = await round.browser.navigate(round.callbackUrl);
    expect(pageText(replay, 'error-code')).toBe('expired_attempt');
  });

  it('a callback opened in another browser (no attempt there)', async () => {
    const account = newUpstreamAccount(upstream);
    const round = await throughUpstream({ account: account.sub });
    const page = await new HttpBrowser(service.issuer).navigate(round.callbackUrl);
    expect(pageText(page, 'error-code')).toBe('expired_attempt');
    await expectNothingWritten(account);
  });

  it('an id_token carrying another nonce', async () => {
    const account = newUpstreamAccount(upstream);
    const round = await throughUpstream({ account: account.sub, tamperNonce: true });
    const page = await round.browser.navigate(round.callbackUrl);
    expect(pageText(page, 'error-code')).toBe('bad_nonce');
    await expectNothingWritten(account);
  });

  it('an expired code', async () => {
    const account = newUpstreamAccount(upstream);
    upstream.setCodeTtl(1);
    try {
      const round = await throughUpstream({ account: account.sub });
      // The code lives until the end of the next second at the upstream.
      await new Promise((resolve) => setTimeout(resolve, 2000 - (Date.now() % 1000)));
      const page = await round.browser.navigate(round.callbackUrl);
      expect(pageText(page, 'error-code')).toBe('expired_code');
      expect(pageText(page, 'error-description')).toContain('took too long');
      await expectNothingWritten(account);
    } finally {
      upstream.setCodeTtl(60);
    }
  });

  it('an id_token not signed by a key of the provider’s JWKS', async () => {
    const account = newUpstreamAccount(forged);
    const round = await throughUpstream({ account: account.sub }, { providerId: 'forged', at: forged });
    const page = await round.browser.navigate(round.callbackUrl);
    expect(pageText(page, 'error-code')).toBe('jwks_mismatch');
    await expectNothingWritten(account);
  });

  it('speaks Russian to a Russian browser', async () => {
    const browser = new HttpBrowser(service.issuer);
    const round = await throughUpstream({ deny: true }, { browser });
    const page = await browser.request(round.callbackUrl, {
      headers: { 'accept-language': 'ru-RU,ru;q=0.9' },
    });
    expect(pageText(page, 'error-description')).toContain(
      'Вы отказались передавать данные аккаунта Upstream ID',
    );
  });
});

describe('an OAuth-only account in the identity API', () => {
  /** Signs in through the provider outside an interaction: a main-auth session, then an access token from its refresh cookie. */
  async function sessionThroughUpstream(account: UpstreamAccount) {
    const browser = new HttpBrowser(service.issuer);
    upstream.script({ account: account.sub });
    const toUpstream = await browser.navigate(
      '/oauth/providers/upstream/start?return_to=%2Fen%2Fauth%3Fdone%3D1',
    );
    const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
    const landed = await browser.navigate(back.url);
    expect(landed.url).toBe(`${service.issuer}/en/auth?done=1`);
    const refreshed = await browser.request('/api/v2/identity/auth/refresh', { method: 'POST' });
    expect(refreshed.status).toBe(200);
    return { browser, accessToken: (JSON.parse(refreshed.html) as { accessToken: string }).accessToken };
  }

  const api = (token: string, path: string, method = 'GET') =>
    fetch(service.url(`/api/v2/identity${path}`), {
      method,
      headers: { authorization: `Bearer ${token}` },
    }).then(async (response) => ({
      status: response.status,
      body: (await response.json()) as Record<string, unknown>,
    }));

  it('signs in to a session, cannot unlink the last sign-in method, adds a password, then can', async () => {
    const account = newUpstreamAccount(upstream);
    const { browser, accessToken } = await sessionThroughUpstream(account);
    const user = await userByEmail(account.email!);

    const listed = await api(accessToken, '/security/linked-providers');
    expect(listed.status).toBe(200);
    const linked = listed.body.linked as { id: string; provider: string; providerName: string }[];
    expect(linked).toMatchObject([{ provider: 'upstream', providerName: 'Upstream ID' }]);

    const refused = await api(accessToken, `/security/linked-providers/${linked[0]!.id}`, 'DELETE');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('last_sign_in_method');
    expect(await linkedMethods(account.sub)).toHaveLength(1);

    // A password added from the security settings is another way in: the provider can go then.
    const newPassword = 'a first password for this account';
    const setPassword = await fetch(service.url('/api/v2/identity/security/password'), {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ newPassword, newPasswordConfirmation: newPassword }),
    });
    expect(setPassword.status).toBe(200);
    const setAgain = await fetch(service.url('/api/v2/identity/security/password'), {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ newPassword, newPasswordConfirmation: newPassword }),
    });
    expect(setAgain.status).toBe(409);
    const unlinked = await api(accessToken, `/security/linked-providers/${linked[0]!.id}`, 'DELETE');
    expect(unlinked.status).toBe(200);

    // Saved on the device like any sign-in.
    const saved = await browser.request('/api/v2/identity/auth/saved-accounts');
    expect(JSON.parse(saved.html).accounts).toMatchObject([{ email: user.email }]);
  });

  it('unlinks a provider when another sign-in method stays', async () => {
    const existing = await createTestUser(db());
    const account = newUpstreamAccount(upstream, { email: existing.email!, email_verified: true });
    const { accessToken } = await sessionThroughUpstream(account);
    const listed = await api(accessToken, '/security/linked-providers');
    const [link] = listed.body.linked as { id: string }[];

    const unlinked = await api(accessToken, `/security/linked-providers/${link!.id}`, 'DELETE');
    expect(unlinked).toEqual({ status: 200, body: { provider: 'upstream', removed: true } });
    expect(await linkedMethods(account.sub)).toEqual([]);
    const again = await api(accessToken, `/security/linked-providers/${link!.id}`, 'DELETE');
    expect(again.status).toBe(404);
  });

  /** POST /security/linked-providers from the signed-in browser, then that browser's trip through the upstream. */
  async function linkThroughUpstream(browser: HttpBrowser, accessToken: string, sub: string) {
    const started = await browser.request('/api/v2/identity/security/linked-providers', {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'upstream', returnTo: '/en/auth?linked=1' }),
    });
    expect(started.status, started.html).toBe(200);
    const { authorizationUrl } = JSON.parse(started.html) as { authorizationUrl: string };
    expect(authorizationUrl.startsWith(upstream.issuer)).toBe(true);
    upstream.script({ account: sub });
    const back = await new HttpBrowser(upstream.issuer).navigate(authorizationUrl);
    return browser.navigate(back.url);
  }

  it('links a provider from the security settings; one linked to another account is refused', async () => {
    const existing = await createTestUser(db());
    const browser = new HttpBrowser(service.issuer);
    const login = await identity.login(existing.email!, existing.password);
    // The provider account's email is someone else's: an explicit link ignores it and takes the subject.
    const account = newUpstreamAccount(upstream, { email: uniqueEmail('other'), email_verified: false });
    const landed = await linkThroughUpstream(browser, login.accessToken, account.sub);
    expect(landed.url).toBe(`${service.issuer}/en/auth?linked=1`);
    expect(await linkedMethods(account.sub)).toMatchObject([{ user_id: existing.id }]);
    const listed = await api(login.accessToken, '/security/linked-providers');
    expect(listed.body.linked).toMatchObject([{ provider: 'upstream', providerName: 'Upstream ID' }]);

    // Another account can't take the same provider account.
    const other = await createTestUser(db());
    const otherLogin = await identity.login(other.email!, other.password);
    const refused = await linkThroughUpstream(
      new HttpBrowser(service.issuer),
      otherLogin.accessToken,
      account.sub,
    );
    expect(refused.status).toBe(400);
    expect(pageText(refused, 'error-code')).toBe('subject_linked_elsewhere');
    expect(pageText(refused, 'error-description')).toContain('already linked to another account');
    expect(await linkedMethods(account.sub)).toMatchObject([{ user_id: existing.id }]);
    expect((await api(otherLogin.accessToken, '/security/linked-providers')).body.linked).toEqual([]);
  });

  it('linking needs a signed-in user, a configured provider and a return path of this service', async () => {
    const existing = await createTestUser(db());
    const login = await identity.login(existing.email!, existing.password);
    const post = (body: unknown, token?: string) =>
      fetch(service.url('/api/v2/identity/security/linked-providers'), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(body),
      });
    expect((await post({ provider: 'upstream', returnTo: '/' })).status).toBe(401);
    const unknown = await post({ provider: 'nobody', returnTo: '/' }, login.accessToken);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toBe('unknown_provider');
    expect(
      (await post({ provider: 'upstream', returnTo: 'https://evil.example/' }, login.accessToken)).status,
    ).toBe(400);
  });

  it('an unconfirmed match outside an interaction asks the person to sign in first, linking nothing', async () => {
    const existing = await createTestUser(db());
    const account = newUpstreamAccount(upstream, { email: existing.email!, email_verified: false });
    const browser = new HttpBrowser(service.issuer);
    upstream.script({ account: account.sub });
    const toUpstream = await browser.navigate('/oauth/providers/upstream/start?return_to=/');
    const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
    const page = await browser.navigate(back.url);
    expect(pageText(page, 'error-code')).toBe('sign_in_first');
    expect(await linkedMethods(account.sub)).toEqual([]);
  });

  it('refuses a return address on another site', async () => {
    const browser = new HttpBrowser(service.issuer);
    const page = await browser.navigate('/oauth/providers/upstream/start?return_to=%2F%2Fevil.example%2F');
    expect(page.status).toBe(400);
    expect(page.url.startsWith(service.issuer)).toBe(true);
  });
});
