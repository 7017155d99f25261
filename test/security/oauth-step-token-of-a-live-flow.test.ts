import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';
import { createTestUser } from '../support/fixtures.js';
import { HttpBrowser, pageText, type Page } from '../support/http-browser.js';
import { freePort } from '../support/free-port.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { startUpstreamProvider, type UpstreamProvider } from '../support/upstream-provider.js';

/**
 * A provider as the second check of the login (the funnel's `oauth` step after the password) takes
 * only a provider account the owner linked. `/oauth/providers/:id/start?step=<token>` ran the account
 * rules for any token, one no flow held included, and without rule 0 (a step is followed by the rest of
 * its funnel, but no funnel followed): whoever can have a provider vouch for the owner's email (the
 * mailbox's controller) linked their own provider account to the owner's, then passed that second
 * check with it. Only the token of a live flow's `oauth` step, for that step's provider, is taken.
 */

let service: TestService;
let upstream: UpstreamProvider;
/** A second provider: a step's token is for the provider its step names. */
let other: UpstreamProvider;
let client: IdentityClient;

const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];
const providerAfterPassword: FunnelStep[] = [
  ...baseLogin,
  { stepId: 'oauth', mandatory: true, order: 30, settings: { provider: 'upstream' } },
];

beforeAll(async () => {
  const port = await freePort();
  const callback = (id: string) => `http://127.0.0.1:${port}/oauth/providers/${id}/callback`;
  upstream = await startUpstreamProvider({ redirectUri: callback('upstream') });
  other = await startUpstreamProvider({ redirectUri: callback('other') });
  const config = (id: string, at: UpstreamProvider) => ({
    id,
    name: id,
    issuer: at.issuer,
    clientId: at.clientId,
    clientSecret: at.clientSecret,
    scopes: ['openid', 'email', 'profile'],
  });
  service = await startTestService({
    port,
    env: { TRUST_PROXY: 'true' },
    oauthProviders: [config('upstream', upstream), config('other', other)],
  });
  client = new IdentityClient(service);
});
afterAll(async () => {
  await service?.close();
  await upstream?.close();
  await other?.close();
});
afterEach(() => replaceFunnel(db(), 'login', baseLogin, new Date()));

const db = () => service.service.db;
const subject = (label: string) => `${label}-${crypto.randomBytes(6).toString('hex')}`;

/** Our start address → the provider, signed in as `sub` → our callback (and on, while on our site). */
async function throughProvider(start: string, sub: string, at = upstream): Promise<Page> {
  const browser = new HttpBrowser(service.issuer);
  at.script({ account: sub });
  const toUpstream = await browser.navigate(start);
  expect(toUpstream.url.startsWith(at.issuer)).toBe(true);
  const back = await new HttpBrowser(at.issuer).navigate(toUpstream.url);
  expect(back.url).toContain('/callback?');
  return browser.navigate(back.url);
}

async function ownerWithProviderSecondCheck() {
  await replaceFunnel(db(), 'login', providerAfterPassword, new Date());
  const owner = await createTestUser(db());
  // The owner's own provider account, linked by them: their second check.
  const ownerSub = subject('owner');
  upstream.addAccount({ sub: ownerSub, email: owner.email!, email_verified: true });
  await db()('user_auth_methods').insert({
    user_id: owner.id,
    type: 'oauth_provider',
    provider: 'upstream',
    external_subject: ownerSub,
    settings: JSON.stringify({}),
    is_enabled: true,
    is_verified: true,
  });
  // Someone else's provider account vouching for the owner's email (they control the mailbox).
  const intruderSub = subject('intruder');
  upstream.addAccount({ sub: intruderSub, email: owner.email!, email_verified: true });
  return { owner, ownerSub, intruderSub };
}

/** The password login (the password is known to the intruder) up to the provider step and through it. */
async function passwordThenProvider(identifier: string, password: string, sub: string) {
  const ip = randomIp();
  const started = await client.start('login', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier }, { ip });
  const afterPassword = await client.pass(identified.sessionId, 'password', { password }, { ip });
  expect(afterPassword.nextStep).toBe('oauth');
  const { startUrl } = afterPassword.screen[0]!.data!.oauth as { startUrl: string };
  const landed = await throughProvider(`${startUrl}&return_to=${encodeURIComponent('/en/auth')}`, sub);
  const proof = new URL(landed.url).searchParams.get('oauth_proof');
  return client.step(afterPassword.sessionId, 'oauth', proof ? { proof } : {}, { ip });
}

describe('a provider step token is taken only from a live flow', () => {
  it('a made-up token links nothing, and the second check still takes only the owner’s provider', async () => {
    const { owner, intruderSub } = await ownerWithProviderSecondCheck();

    const madeUp = crypto.randomBytes(32).toString('base64url');
    const page = await throughProvider(
      `/oauth/providers/upstream/start?step=${madeUp}&return_to=${encodeURIComponent('/en/auth')}`,
      intruderSub,
    );
    const taken = await passwordThenProvider(owner.email!, owner.password, intruderSub);
    expect({ status: taken.body.status, userId: taken.body.userId }).not.toEqual({
      status: 'completed',
      userId: owner.id,
    });
    expect(await db()('sessions').where({ user_id: owner.id })).toEqual([]);
    expect(await db()('user_auth_methods').where({ external_subject: intruderSub })).toEqual([]);
    expect(page.status).toBe(400);
    expect(pageText(page, 'error-code')).toBe('expired_attempt');
  });

  it('a live flow’s token is taken for its step’s provider only', async () => {
    const { owner } = await ownerWithProviderSecondCheck();
    // Someone's own flow whose step names `upstream` (here: the funnel's first step).
    await replaceFunnel(
      db(),
      'login',
      [{ stepId: 'oauth', mandatory: true, order: 10, settings: { provider: 'upstream' } }],
      new Date(),
    );
    const started = await client.start('login', { ip: randomIp() });
    const token = new URL((started.screen[0]!.data!.oauth as { startUrl: string }).startUrl).searchParams.get(
      'step',
    )!;
    // Their account at the other provider vouches for the owner's email.
    const elsewhere = other.addAccount({ sub: subject('other'), email: owner.email!, email_verified: true });
    const page = await throughProvider(
      `/oauth/providers/other/start?step=${token}&return_to=${encodeURIComponent('/en/auth')}`,
      elsewhere.sub,
      other,
    );
    expect(pageText(page, 'error-code')).toBe('expired_attempt');
    expect(await db()('user_auth_methods').where({ external_subject: elsewhere.sub })).toEqual([]);
  });

  it('the owner passes the second check with their own provider account', async () => {
    const { owner, ownerSub } = await ownerWithProviderSecondCheck();
    const done = await passwordThenProvider(owner.email!, owner.password, ownerSub);
    expect(done.body).toMatchObject({ status: 'completed', userId: owner.id });
  });
});
