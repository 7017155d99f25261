import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { funnelProblems } from '../../../src/admin/auth-flow-routes.js';
import { parseFunnelSteps } from '../../../src/cli/commands/auth-flow-admin.js';
import { replaceFunnel, type FunnelStep } from '../../../src/identity/auth-flow/funnel-steps.js';
import { createTestClient, createTestUser, uniqueEmail } from '../../support/fixtures.js';
import { HttpBrowser, pageText, type Page } from '../../support/http-browser.js';
import { buildAuthorizationRequest, discover, oidc } from '../../support/relying-party.js';
import type { TestService } from '../../support/test-service.js';
import type { UpstreamProvider } from '../../support/upstream-provider.js';
import { IdentityClient, MovableClock, randomIp } from '../support/identity-client.js';
import { setUpTotp, totpCode } from '../support/totp-codes.js';
import { startServiceWithUpstream } from '../../support/service-with-upstream.js';

// The built-in `oauth` step: a third-party provider as one step of the login funnel, after which the
// rest of the funnel (here an authenticator app's code) still runs.
let service: TestService;
let upstream: UpstreamProvider;
let client: IdentityClient;
let rp: oidc.Configuration;
const clock = new MovableClock();

const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];
const oauthStep: FunnelStep = {
  stepId: 'oauth',
  mandatory: true,
  order: 10,
  settings: { provider: 'upstream' },
};

beforeAll(async () => {
  ({ service, upstream } = await startServiceWithUpstream({
    clock,
    env: { TRUST_PROXY: 'true' },
    upstreamScopes: ['openid', 'email', 'profile'],
  }));
  client = new IdentityClient(service);
  const { client: oauthClient } = await createTestClient(service.service.db);
  rp = await discover(service.issuer, oauthClient.clientId);
});
afterAll(async () => {
  await service?.close();
  await upstream?.close();
});
afterEach(() => replaceFunnel(service.service.db, 'login', baseLogin, new Date()));

const db = () => service.service.db;
const setLoginFunnel = (steps: FunnelStep[]) => replaceFunnel(db(), 'login', steps, new Date());
const decode = (value: string) => value.replace(/&amp;/g, '&');

function upstreamAccount(email = uniqueEmail('step')) {
  return upstream.addAccount({
    sub: `step-${crypto.randomBytes(6).toString('hex')}`,
    email,
    email_verified: true,
    given_name: 'Grace',
    family_name: 'Hopper',
  });
}

/** The browser's trip: our start address → the upstream (signs in as `sub`) → our callback → `return_to`. */
async function throughProvider(browser: HttpBrowser, startUrl: string, sub: string): Promise<Page> {
  upstream.script({ account: sub });
  const toUpstream = await browser.navigate(startUrl);
  expect(toUpstream.url.startsWith(upstream.issuer)).toBe(true);
  const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
  expect(back.url).toContain('/oauth/providers/upstream/callback');
  return browser.navigate(back.url);
}

describe('the oauth step of a funnel', () => {
  it('API flow: the provider identifies the person, then the account’s TOTP step is still asked', async () => {
    const user = await createTestUser(db());
    const secret = await setUpTotp(client, await client.login(user.email!, user.password), clock);
    clock.advance(31_000); // the next TOTP window: a code is used once
    await setLoginFunnel([oauthStep, { stepId: 'totp', mandatory: false, order: 20 }]);
    const account = upstreamAccount(user.email!);
    const ip = randomIp();

    const started = await client.start('login', { ip });
    expect(started.nextStep).toBe('oauth');
    const oauth = started.screen[0]!.data!.oauth as { provider: string; name: string; startUrl: string };
    expect(oauth).toMatchObject({ provider: 'upstream', name: 'Upstream ID' });

    // Before the provider answered there is nothing to take; the client can't say who it is either.
    const early = await client.step(started.sessionId, 'oauth', {}, { ip });
    expect(early.status).toBe(409);
    expect(early.body.error).toBe('oauth_pending');
    const forged = await client.step(started.sessionId, 'oauth', { userId: user.id }, { ip });
    expect(forged.status).toBe(400);

    const landed = await throughProvider(
      new HttpBrowser(service.issuer),
      `${oauth.startUrl}&return_to=${encodeURIComponent('/en/auth?back=1')}`,
      account.sub,
    );
    const back = new URL(landed.url);
    expect(`${back.origin}${back.pathname}`).toBe(`${service.issuer}/en/auth`);
    expect(back.searchParams.get('back')).toBe('1');
    const proof = back.searchParams.get('oauth_proof')!;
    expect(proof).toMatch(/^[\w-]{40,}$/);

    const identified = await client.pass(started.sessionId, 'oauth', { proof }, { ip });
    expect(identified.nextStep).toBe('totp');
    const wrong = await client.step(identified.sessionId, 'totp', { code: '000000' }, { ip });
    expect(wrong.status).toBe(401);
    const done = await client.step(
      identified.sessionId,
      'totp',
      { code: await totpCode(secret, clock.now()) },
      { ip },
    );
    expect(done.body).toMatchObject({ status: 'completed', userId: user.id });
    // The provider's email was verified: linked to the account (account rule 6).
    const links = await db()('user_auth_methods').where({
      type: 'oauth_provider',
      external_subject: account.sub,
    });
    expect(links).toMatchObject([{ user_id: user.id }]);
  });

  it('the provider’s answer is taken once', async () => {
    await setLoginFunnel([oauthStep]);
    const account = upstreamAccount();
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const oauth = started.screen[0]!.data!.oauth as { startUrl: string };
    const landed = await throughProvider(
      new HttpBrowser(service.issuer),
      `${oauth.startUrl}&return_to=/en/auth`,
      account.sub,
    );
    const proof = new URL(landed.url).searchParams.get('oauth_proof')!;
    const done = await client.step(started.sessionId, 'oauth', { proof }, { ip });
    expect(done.body.status).toBe('completed');
    const user = await db()('users').where({ email: account.email }).first();
    expect(done.body.userId).toBe(user.id);

    // Another flow can't present the same token (the token is the first flow's; its answer is used).
    const again = await client.start('login', { ip });
    expect(again.screen[0]!.data!.oauth).not.toEqual(oauth);
    expect((await client.step(again.sessionId, 'oauth', { proof }, { ip })).body.error).toBe('oauth_pending');
  });

  it('a start link sent to someone else does not hand their sign-in to the flow that made it', async () => {
    await setLoginFunnel([oauthStep]);
    const victim = upstreamAccount();
    const ip = randomIp();
    // Whoever holds this flow sends its start address to someone signed in at the provider.
    const started = await client.start('login', { ip });
    const oauth = started.screen[0]!.data!.oauth as { startUrl: string };
    const victimBrowser = new HttpBrowser(service.issuer);
    await throughProvider(victimBrowser, `${oauth.startUrl}&return_to=/en/auth`, victim.sub);
    // The proof went to the other person's browser; the flow's holder has none, and can't guess one.
    const taken = await client.step(started.sessionId, 'oauth', {}, { ip });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('oauth_pending');
    const guessed = await client.step(started.sessionId, 'oauth', { proof: 'a'.repeat(43) }, { ip });
    expect(guessed.body.error).toBe('oauth_pending');
  });

  it('after an earlier step identified someone: only a provider account linked to them, nothing created', async () => {
    const user = await createTestUser(db());
    // Linked through a one-step funnel first (the provider vouched for the user's email).
    await setLoginFunnel([oauthStep]);
    const linked = upstreamAccount(user.email!);
    const first = await client.start('login');
    const firstStart = (first.screen[0]!.data!.oauth as { startUrl: string }).startUrl;
    const linkedLanding = await throughProvider(
      new HttpBrowser(service.issuer),
      `${firstStart}&return_to=/en/auth`,
      linked.sub,
    );
    const firstProof = new URL(linkedLanding.url).searchParams.get('oauth_proof')!;
    expect((await client.step(first.sessionId, 'oauth', { proof: firstProof })).body.userId).toBe(user.id);

    // Now the provider comes after the password, as a second check of the same person.
    await setLoginFunnel([...baseLogin, { ...oauthStep, order: 30 }]);
    const passwordFirst = async (ip: string) => {
      const started = await client.start('login', { ip });
      const identified = await client.pass(
        started.sessionId,
        'phone-email',
        { identifier: user.email },
        { ip },
      );
      const atOAuth = await client.pass(
        identified.sessionId,
        'password',
        { password: user.password },
        { ip },
      );
      expect(atOAuth.nextStep).toBe('oauth');
      return atOAuth;
    };
    // A provider account of nobody here: refused at the callback, and no account made for it.
    const ip = randomIp();
    const stranger = upstreamAccount();
    const atOAuth = await passwordFirst(ip);
    const start = (atOAuth.screen[0]!.data!.oauth as { startUrl: string }).startUrl;
    const refused = await throughProvider(
      new HttpBrowser(service.issuer),
      `${start}&return_to=/en/auth`,
      stranger.sub,
    );
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('is not linked to the account signing in');
    expect(await db()('users').where({ email: stranger.email })).toHaveLength(0);
    expect(await db()('user_auth_methods').where({ external_subject: stranger.sub })).toHaveLength(0);

    // The account linked to this user: the funnel completes as that user.
    const again = await passwordFirst(ip);
    const againStart = (again.screen[0]!.data!.oauth as { startUrl: string }).startUrl;
    const landed = await throughProvider(
      new HttpBrowser(service.issuer),
      `${againStart}&return_to=/en/auth`,
      linked.sub,
    );
    const proof = new URL(landed.url).searchParams.get('oauth_proof')!;
    const done = await client.step(again.sessionId, 'oauth', { proof }, { ip });
    expect(done.body).toMatchObject({ status: 'completed', userId: user.id });
  });

  it('on /:lang/auth for an OIDC client: the step’s button, the provider, back at the client', async () => {
    await setLoginFunnel([oauthStep]);
    const account = upstreamAccount();
    const browser = new HttpBrowser(service.issuer);
    const request = await buildAuthorizationRequest(rp);
    const login = await browser.navigate(request.url.toString());
    expect(login.url).toContain('/en/auth?interaction=');
    expect(pageText(login, 'oauth-step')).toBe('Sign in with Upstream ID');
    const href = /data-testid="oauth-step"[^>]*href="([^"]+)"/.exec(login.html)?.[1];
    let page = await throughProvider(browser, decode(href!), account.sub);
    if (page.html.includes('value="allow"')) page = await browser.submit(page, { decision: 'allow' });
    expect(page.url.startsWith('http://localhost:8080/callback')).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(rp, new URL(page.url), {
      pkceCodeVerifier: request.codeVerifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    const user = await db()('users').where({ email: account.email }).first();
    expect(tokens.claims()!.sub).toBe(user.id);
  });

  it('on /:lang/auth without a client: back from the provider, the TOTP step, then signed in', async () => {
    const user = await createTestUser(db());
    const secret = await setUpTotp(client, await client.login(user.email!, user.password), clock);
    clock.advance(31_000);
    await setLoginFunnel([oauthStep, { stepId: 'totp', mandatory: false, order: 20 }]);
    const account = upstreamAccount(user.email!);
    const browser = new HttpBrowser(service.issuer);
    const login = await browser.navigate('/en/auth');
    const href = /data-testid="oauth-step"[^>]*href="([^"]+)"/.exec(login.html)?.[1];
    const totp = await throughProvider(browser, decode(href!), account.sub);
    expect(totp.url).toContain('/en/auth?flow=');
    expect(totp.html).toContain('data-step="totp"');
    const signedIn = await browser.submit(totp, { code: await totpCode(secret, clock.now()) });
    expect(pageText(signedIn, 'signed-in')).toBe('You are signed in');
    const refreshed = await browser.request('/api/v2/identity/auth/refresh', { method: 'POST' });
    expect(refreshed.status).toBe(200);
    // Coming back to the used address starts over instead of signing in again.
    const replay = await browser.navigate(totp.url);
    expect(replay.html).not.toContain('data-step="totp"');
  });

  it('speaks Russian on /ru/auth', async () => {
    await setLoginFunnel([oauthStep]);
    const page = await new HttpBrowser(service.issuer).navigate('/ru/auth');
    expect(pageText(page, 'oauth-step')).toBe('Войти через Upstream ID');
    expect(page.html).toContain('Вход с аккаунтом Upstream ID');
  });

  it('a funnel must name a configured provider for its oauth step', () => {
    const steps = service.service.steps;
    expect(funnelProblems([oauthStep], 'login', steps)).toEqual([]);
    expect(funnelProblems([{ ...oauthStep, settings: undefined }], 'login', steps)).toEqual([
      { path: 'steps.0.settings', message: 'the oauth step needs settings.provider, a provider id' },
    ]);
    expect(funnelProblems([{ ...oauthStep, settings: { provider: 'nobody' } }], 'login', steps)).toEqual([
      { path: 'steps.0.settings', message: 'no oauth_provider nobody is configured' },
    ]);
    expect(parseFunnelSteps('login', ['oauth=upstream', 'totp:optional'])).toEqual([
      { stepId: 'oauth', mandatory: true, order: 1, settings: { provider: 'upstream' } },
      { stepId: 'totp', mandatory: false, order: 2 },
    ]);
    expect(() => parseFunnelSteps('login', ['oauth'])).toThrow(/names its provider/);
    expect(() => parseFunnelSteps('login', ['password=upstream'])).toThrow(/only the oauth step/);
  });
});
