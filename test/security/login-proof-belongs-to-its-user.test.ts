import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { funnelProblems } from '../../src/admin/auth-flow-routes.js';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import type { TestService } from '../support/test-service.js';
import type { UpstreamProvider } from '../support/upstream-provider.js';
import { startServiceWithUpstream } from '../support/service-with-upstream.js';

/**
 * A step that proves who signs in proves it for one account. A funnel the administration API accepts
 * may name an identifying step (phone-email, account-selection) after a proving one (here the `oauth`
 * step): the identifying step must not turn the flow to another account and keep the proof. Otherwise
 * someone signs in at the provider with an account of their own, types another person's email, and
 * the rest of the funnel (that person's own: nothing more for an account without a password, or only
 * the terms) finishes as that person.
 */

let service: TestService;
let upstream: UpstreamProvider;
let client: IdentityClient;

beforeAll(async () => {
  ({ service, upstream } = await startServiceWithUpstream({
    env: { TRUST_PROXY: 'true' },
    upstreamScopes: ['openid', 'email', 'profile'],
  }));
  client = new IdentityClient(service);
});
afterAll(async () => {
  await service?.close();
  await upstream?.close();
});

const oauthFirst: FunnelStep = {
  stepId: 'oauth',
  mandatory: true,
  order: 10,
  settings: { provider: 'upstream' },
};
const identify: FunnelStep = { stepId: 'phone-email', mandatory: true, order: 20 };

async function useFunnel(steps: FunnelStep[]) {
  // What PUT /api/v2/admin/auth-flow/funnels/login accepts.
  expect(funnelProblems(steps, 'login', service.service.steps)).toEqual([]);
  await replaceFunnel(service.service.db, 'login', steps, service.service.clock.now());
}

/**
 * Someone passes the `oauth` step with a provider account of their own (a new account here); answers
 * the flow after it and the account the provider signed in.
 */
async function passProviderWithOwnAccount(ip: string) {
  const account = upstream.addAccount({
    sub: `own-${crypto.randomBytes(6).toString('hex')}`,
    email: uniqueEmail('own'),
    email_verified: true,
  });
  const started = await client.start('login', { ip });
  expect(started.nextStep).toBe('oauth');
  const { startUrl } = started.screen[0]!.data!.oauth as { startUrl: string };
  const browser = new HttpBrowser(service.issuer);
  upstream.script({ account: account.sub });
  const toUpstream = await browser.navigate(`${startUrl}&return_to=${encodeURIComponent('/en/auth')}`);
  const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
  const landed = await browser.navigate(back.url);
  const proof = new URL(landed.url).searchParams.get('oauth_proof')!;
  const afterProvider = await client.pass(started.sessionId, 'oauth', { proof }, { ip });
  const own = await service.service.db('users').where({ email: account.email }).first('id');
  return { afterProvider, ownId: (own as { id: string }).id, ownEmail: account.email };
}

async function sessionsOf(userId: string) {
  return service.service.db('sessions').where({ user_id: userId });
}

describe('an identifying step after a proof can’t turn the sign-in to another account', () => {
  it('funnel oauth, phone-email, optional password: an account without a password stays out of reach', async () => {
    await useFunnel([oauthFirst, identify, { stepId: 'password', mandatory: false, order: 30 }]);
    const victim = await createTestUser(service.service.db, { password: null });
    const ip = randomIp();
    const { afterProvider } = await passProviderWithOwnAccount(ip);
    expect(afterProvider.nextStep).toBe('phone-email');

    const answer = await client.step(
      afterProvider.sessionId,
      'phone-email',
      { identifier: victim.email },
      { ip },
    );
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('account_mismatch');
    expect(answer.body).not.toHaveProperty('accessToken');
    expect(await sessionsOf(victim.id)).toHaveLength(0);
  });

  it('funnel oauth, phone-email, consent: an account with a password stays out of reach', async () => {
    await useFunnel([oauthFirst, identify, { stepId: 'consent', mandatory: true, order: 30 }]);
    const victim = await createTestUser(service.service.db);
    const ip = randomIp();
    const { afterProvider } = await passProviderWithOwnAccount(ip);

    const answer = await client.step(
      afterProvider.sessionId,
      'phone-email',
      { identifier: victim.email },
      { ip },
    );
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('account_mismatch');
    expect(await sessionsOf(victim.id)).toHaveLength(0);
  });

  it('naming the account the provider signed in goes on as before', async () => {
    await useFunnel([oauthFirst, identify, { stepId: 'consent', mandatory: true, order: 30 }]);
    const ip = randomIp();
    const { afterProvider, ownId, ownEmail } = await passProviderWithOwnAccount(ip);
    const identified = await client.pass(
      afterProvider.sessionId,
      'phone-email',
      { identifier: ownEmail },
      { ip },
    );
    expect(identified.nextStep).toBe('consent');
    const done = await client.step(identified.sessionId, 'consent', { accept: true }, { ip });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', userId: ownId });
  });
});
