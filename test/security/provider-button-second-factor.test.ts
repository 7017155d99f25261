import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { allowedMethodsSetting } from '../../src/identity/auth-flow/allowed-methods.js';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { clearSetting, writeSetting } from '../../src/platform/settings/platform-settings.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';
import {
  callbackUri,
  createTestClient,
  createTestUser,
  uniqueEmail,
  uniquePhone,
} from '../support/fixtures.js';
import { HttpBrowser, pageText, type Page } from '../support/http-browser.js';
import { buildAuthorizationRequest, discover, type oidc } from '../support/relying-party.js';
import type { TestService } from '../support/test-service.js';
import type { UpstreamAccount, UpstreamProvider } from '../support/upstream-provider.js';
import { startServiceWithUpstream } from '../support/service-with-upstream.js';

/**
 * A provider's "Sign in with X" button stands for one proof and ends the sign-in: nothing of the login
 * funnel runs after it. An account whose own login asks for a second proof (a code after the password,
 * configured by the administrator or added by the user) must not be signed in to by the button alone,
 * as an account with an authenticator app is not. Otherwise whoever controls the mailbox creates a
 * provider account for that address (the provider vouches for it, so it is linked) and skips the code
 * the login would have asked, which a password reset alone would still leave in the way.
 */

let service: TestService;
let upstream: UpstreamProvider;
let client: IdentityClient;
let rp: oidc.Configuration;

beforeAll(async () => {
  ({ service, upstream } = await startServiceWithUpstream({ env: { TRUST_PROXY: 'true' } }));
  client = new IdentityClient(service);
  const { client: oauthClient } = await createTestClient(service.service.db);
  rp = await discover(service.issuer, oauthClient.clientId);
});
afterAll(async () => {
  await service?.close();
  await upstream?.close();
});

const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];
const codeAfterPassword: FunnelStep[] = [...baseLogin, { stepId: 'otp-code', mandatory: true, order: 30 }];

const db = () => service.service.db;
const setLoginFunnel = (steps: FunnelStep[]) => replaceFunnel(db(), 'login', steps, new Date());
const decode = (value: string) => value.replace(/&amp;/g, '&');

afterEach(async () => {
  await setLoginFunnel(baseLogin);
  await clearSetting(db(), allowedMethodsSetting);
});

function upstreamAccount(claims: Partial<UpstreamAccount>): UpstreamAccount {
  return upstream.addAccount({
    sub: `button-${crypto.randomBytes(6).toString('hex')}`,
    email: uniqueEmail('button'),
    email_verified: true,
    ...claims,
  });
}

type Button = 'on the OIDC login page' | 'on /:lang/auth';
const buttons: Button[] = ['on the OIDC login page', 'on /:lang/auth'];

/**
 * Follows the provider's button (not a funnel's `oauth` step) to the upstream, signed in there as
 * `sub`, and back. Answers the page our callback led to, and whether it signed the person in.
 */
async function signInByButton(sub: string, button: Button): Promise<{ page: Page; signedIn: boolean }> {
  const browser = new HttpBrowser(service.issuer);
  let start: string;
  if (button === 'on the OIDC login page') {
    const login = await browser.navigate((await buildAuthorizationRequest(rp)).url.toString());
    // The button's address; a page whose funnel starts with the provider's own step shows that
    // step's button instead, and the button's address is still there to be opened.
    const href = /data-provider="upstream" href="([^"]*\/interaction\/[^"]+)"/.exec(login.html)?.[1];
    const uid = new URL(login.url).searchParams.get('interaction');
    if (!href && !uid) throw new Error(`no provider button on the login page:\n${login.html}`);
    start = href ? decode(href) : `/interaction/${uid}/oauth/upstream`;
  } else {
    start = '/oauth/providers/upstream/start?return_to=%2Fen%2Fauth%3Fdone%3D1';
  }
  upstream.script({ account: sub });
  const toUpstream = await browser.navigate(start);
  expect(toUpstream.url.startsWith(upstream.issuer)).toBe(true);
  const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
  expect(back.url).toContain('/oauth/providers/upstream/callback');
  let page = await browser.navigate(back.url);
  if (page.html.includes('name="decision"') && page.html.includes('value="allow"')) {
    page = await browser.submit(page, { decision: 'allow' });
  }
  const signedIn =
    button === 'on the OIDC login page'
      ? page.url.startsWith(callbackUri)
      : page.url === `${service.issuer}/en/auth?done=1`;
  return { page, signedIn };
}

/** Refused like an account with an authenticator app, and nothing written for it. */
async function expectRefused(
  attempt: { page: Page; signedIn: boolean },
  userId: string,
  account: UpstreamAccount,
) {
  expect(attempt.signedIn).toBe(false);
  expect(attempt.page.status).toBe(400);
  expect(pageText(attempt.page, 'error-code')).toBe('second_factor_required');
  expect(await db()('user_auth_methods').where({ external_subject: account.sub })).toEqual([]);
  expect(await db()('sessions').where({ user_id: userId })).toEqual([]);
  // No account made for the provider's email either (rule 4).
  expect(await db()('users').where({ email: account.email }).whereNot({ id: userId })).toEqual([]);
}

/** The login of `identifier` with its password asks for a code next: the second proof the button would skip. */
async function expectPasswordLoginAsksCode(identifier: string, password: string) {
  const ip = randomIp();
  const started = await client.start('login', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, { ip });
  const afterPassword = await client.pass(identified.sessionId, 'password', { password }, { ip });
  expect(afterPassword.nextStep).toBe('otp-code');
}

describe('a provider’s button refuses an account whose login asks for a second proof', () => {
  for (const button of buttons) {
    it(`(a) the login funnel asks a code after the password: refused ${button}`, async () => {
      await setLoginFunnel(codeAfterPassword);
      const user = await createTestUser(db());
      await expectPasswordLoginAsksCode(user.email!, user.password);
      // The provider vouches for the email: account rule 2 would link it.
      const account = upstreamAccount({ email: user.email! });
      await expectRefused(await signInByButton(account.sub, button), user.id, account);
    });
  }

  it('(a) also when the provider account is linked already', async () => {
    const user = await createTestUser(db());
    const account = upstreamAccount({ email: user.email! });
    expect((await signInByButton(account.sub, 'on /:lang/auth')).signedIn).toBe(true);
    await db()('sessions').where({ user_id: user.id }).delete();

    await setLoginFunnel(codeAfterPassword);
    const attempt = await signInByButton(account.sub, 'on /:lang/auth');
    expect(attempt.signedIn).toBe(false);
    expect(pageText(attempt.page, 'error-code')).toBe('second_factor_required');
    expect(await db()('sessions').where({ user_id: user.id })).toEqual([]);
  });

  it('(b) a code by email the user turned on: refused', async () => {
    await writeSetting(db(), allowedMethodsSetting, ['totp', 'email_otp'], new Date());
    const user = await createTestUser(db());
    const { accessToken: token } = await client.login(user.email!, user.password);
    const enabled = await client.post('/security/auth-methods/email_otp/setup', undefined, { token });
    expect(enabled.status).toBe(200);
    await db()('sessions').where({ user_id: user.id }).delete();
    await expectPasswordLoginAsksCode(user.email!, user.password);

    const account = upstreamAccount({ email: user.email! });
    await expectRefused(await signInByButton(account.sub, 'on the OIDC login page'), user.id, account);
  });

  it('(b) a code by SMS the user turned on: refused when the provider vouches for the phone', async () => {
    await writeSetting(db(), allowedMethodsSetting, ['totp', 'sms_otp'], new Date());
    const phone = uniquePhone();
    const user = await createTestUser(db(), { phone, phoneVerified: true });
    const { accessToken: token } = await client.login(user.email!, user.password);
    const enabled = await client.post('/security/auth-methods/sms_otp/setup', undefined, { token });
    expect(enabled.status).toBe(200);
    await db()('sessions').where({ user_id: user.id }).delete();
    await expectPasswordLoginAsksCode(phone, user.password);

    const account = upstreamAccount({
      email: uniqueEmail('elsewhere'),
      email_verified: false,
      phone_number: phone,
      phone_number_verified: true,
    });
    await expectRefused(await signInByButton(account.sub, 'on /:lang/auth'), user.id, account);
  });
});

describe('a login that asks for the provider besides the password: the button alone is one proof', () => {
  const providerStep = (order: number): FunnelStep => ({
    stepId: 'oauth',
    mandatory: true,
    order,
    settings: { provider: 'upstream' },
  });
  const funnels: [string, FunnelStep[]][] = [
    ['after the password (a second check)', [...baseLogin, providerStep(30)]],
    ['before the password', [providerStep(10), { stepId: 'password', mandatory: true, order: 20 }]],
  ];
  for (const [label, funnel] of funnels) {
    for (const button of buttons) {
      it(`(c) the funnel's oauth step ${label}: refused ${button}`, async () => {
        await setLoginFunnel(funnel);
        const user = await createTestUser(db());
        const account = upstreamAccount({ email: user.email! });
        // The owner linked the provider, as the funnel's step asks; whoever holds that provider
        // account (or the mailbox, which the provider vouches for) does not know the password.
        await db()('user_auth_methods').insert({
          user_id: user.id,
          type: 'oauth_provider',
          provider: 'upstream',
          external_subject: account.sub,
          settings: JSON.stringify({}),
          is_enabled: true,
          is_verified: true,
        });
        // The login asks for both: the provider is not the whole of it.
        const ip = randomIp();
        const started = await client.start('login', { ip });
        if (started.nextStep === 'phone-email') {
          const identified = await client.pass(
            started.sessionId,
            'phone-email',
            { identifier: user.email },
            { ip },
          );
          const afterPassword = await client.pass(
            identified.sessionId,
            'password',
            { password: user.password },
            { ip },
          );
          expect(afterPassword.nextStep).toBe('oauth');
        } else {
          expect(started.nextStep).toBe('oauth');
        }
        const attempt = await signInByButton(account.sub, button);
        expect(attempt.signedIn).toBe(false);
        expect(attempt.page.status).toBe(400);
        expect(pageText(attempt.page, 'error-code')).toBe('second_factor_required');
        expect(await db()('sessions').where({ user_id: user.id })).toEqual([]);
      });
    }
  }

  it('(c) not linked yet: the provider vouching for the email links nothing and signs no one in', async () => {
    await setLoginFunnel([...baseLogin, providerStep(30)]);
    const user = await createTestUser(db());
    const account = upstreamAccount({ email: user.email! });
    await expectRefused(await signInByButton(account.sub, 'on the OIDC login page'), user.id, account);
  });
});

describe('an account whose login asks for one proof still signs in by the button', () => {
  it('password only, while the administrator allows codes the user did not turn on', async () => {
    await writeSetting(db(), allowedMethodsSetting, ['totp', 'email_otp', 'sms_otp'], new Date());
    const user = await createTestUser(db(), { phone: uniquePhone(), phoneVerified: true });
    const account = upstreamAccount({ email: user.email! });
    expect((await signInByButton(account.sub, 'on the OIDC login page')).signedIn).toBe(true);
    expect(await db()('user_auth_methods').where({ external_subject: account.sub })).toMatchObject([
      { user_id: user.id, type: 'oauth_provider' },
    ]);
  });

  it('an optional code step the user turned off', async () => {
    await setLoginFunnel([...baseLogin, { stepId: 'otp-code', mandatory: false, order: 30 }]);
    const user = await createTestUser(db());
    await db()('user_auth_methods').insert({
      user_id: user.id,
      type: 'email_otp',
      is_enabled: false,
      is_verified: true,
    });
    const account = upstreamAccount({ email: user.email! });
    expect((await signInByButton(account.sub, 'on /:lang/auth')).signedIn).toBe(true);
    expect(await db()('sessions').where({ user_id: user.id })).toHaveLength(1);
  });

  it('a code step whose method the user can’t have (no phone): the code by email is the one proof', async () => {
    // Codes replace the password here: the login asks one proof, the code.
    await setLoginFunnel([
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'otp-code', mandatory: true, order: 20 },
    ]);
    const user = await createTestUser(db(), { password: null });
    const account = upstreamAccount({ email: user.email! });
    expect((await signInByButton(account.sub, 'on /:lang/auth')).signedIn).toBe(true);
  });
});

describe('the funnel’s own `oauth` step is not the button: the rest of the funnel runs after it', () => {
  it('an account the button refuses goes on to its password and code', async () => {
    const funnel: FunnelStep[] = [
      { stepId: 'oauth', mandatory: true, order: 10, settings: { provider: 'upstream' } },
      { stepId: 'password', mandatory: true, order: 20 },
      { stepId: 'otp-code', mandatory: true, order: 30 },
    ];
    await setLoginFunnel(funnel);
    const user = await createTestUser(db());
    const account = upstreamAccount({ email: user.email! });
    await expectRefused(await signInByButton(account.sub, 'on /:lang/auth'), user.id, account);

    const ip = randomIp();
    const started = await client.start('login', { ip });
    expect(started.nextStep).toBe('oauth');
    const { startUrl } = started.screen[0]!.data!.oauth as { startUrl: string };
    const browser = new HttpBrowser(service.issuer);
    upstream.script({ account: account.sub });
    const toUpstream = await browser.navigate(`${startUrl}&return_to=${encodeURIComponent('/en/auth')}`);
    const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
    const landed = await browser.navigate(back.url);
    const proof = new URL(landed.url).searchParams.get('oauth_proof');
    expect(proof).toBeTruthy();
    const afterProvider = await client.pass(started.sessionId, 'oauth', { proof }, { ip });
    expect(afterProvider.nextStep).toBe('password');
    // Not signed in yet: the password (and then the code) are still to come.
    expect(await db()('sessions').where({ user_id: user.id })).toEqual([]);
  });
});
