import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdentityClient } from '../identity/support/identity-client.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import type { TestService } from '../support/test-service.js';
import type { UpstreamAccount, UpstreamProvider } from '../support/upstream-provider.js';
import { startServiceWithUpstream } from '../support/service-with-upstream.js';

/**
 * The owner unlinks a provider account that a thief holds (the reason to unlink it): the thief's
 * sessions end. The thief then signed in through the same provider account again, and since it vouches
 * for the account's email, it was linked again at once (rule 6's automatic link): a new session, and
 * the way in back, undoing the unlink. A subject the owner unlinked is no longer linked automatically:
 * the person signs in to the account first, as when the provider does not vouch for the email.
 */

let service: TestService;
let upstream: UpstreamProvider;
let identity: IdentityClient;

beforeAll(async () => {
  ({ service, upstream } = await startServiceWithUpstream());
  identity = new IdentityClient(service);
});
afterAll(async () => {
  await service?.close();
  await upstream?.close();
});

const db = () => service.service.db;

const linkedMethods = (subject: string) =>
  db()('user_auth_methods').where({ type: 'oauth_provider', external_subject: subject });

/** A sign-in through the provider's button outside an interaction (the /:lang/auth page). */
async function signInThroughUpstream(account: UpstreamAccount) {
  const browser = new HttpBrowser(service.issuer);
  upstream.script({ account: account.sub });
  const toUpstream = await browser.navigate('/oauth/providers/upstream/start?return_to=%2Fen%2Fauth');
  const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
  const landed = await browser.navigate(back.url);
  const refreshed = await browser.request(service.url('/api/v2/identity/auth/refresh'), { method: 'POST' });
  return { landed, signedIn: refreshed.status === 200 };
}

describe('a provider account the owner unlinked', () => {
  it('is not linked again by signing in through it', async () => {
    const owner = await createTestUser(db());
    const account = upstream.addAccount({
      sub: `upstream-${crypto.randomBytes(6).toString('hex')}`,
      email: owner.email!,
      email_verified: true,
    });
    expect((await signInThroughUpstream(account)).signedIn).toBe(true);
    const [link] = await linkedMethods(account.sub);
    expect(link).toMatchObject({ user_id: owner.id });

    const login = await identity.login(owner.email!, owner.password);
    const unlinked = await identity.delete(`/security/linked-providers/${link.id}`, {
      token: login.accessToken,
    });
    expect(unlinked.status).toBe(200);

    expect((await signInThroughUpstream(account)).signedIn).toBe(false);
    expect(await linkedMethods(account.sub)).toEqual([]);
  });

  it('the owner links it again from the security settings: it signs in again', async () => {
    const owner = await createTestUser(db());
    const account = upstream.addAccount({
      sub: `upstream-${crypto.randomBytes(6).toString('hex')}`,
      email: owner.email!,
      email_verified: true,
    });
    await signInThroughUpstream(account);
    const [link] = await linkedMethods(account.sub);
    const login = await identity.login(owner.email!, owner.password);
    await identity.delete(`/security/linked-providers/${link.id}`, { token: login.accessToken });

    const again = await identity.login(owner.email!, owner.password);
    const browser = new HttpBrowser(service.issuer);
    const started = await browser.request('/api/v2/identity/security/linked-providers', {
      method: 'POST',
      headers: { authorization: `Bearer ${again.accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'upstream', returnTo: '/en/auth?linked=1' }),
    });
    expect(started.status, started.html).toBe(200);
    upstream.script({ account: account.sub });
    const { authorizationUrl } = JSON.parse(started.html) as { authorizationUrl: string };
    const back = await new HttpBrowser(upstream.issuer).navigate(authorizationUrl);
    expect((await browser.navigate(back.url)).url).toBe(`${service.issuer}/en/auth?linked=1`);

    expect((await signInThroughUpstream(account)).signedIn).toBe(true);
  });

  it('another account’s provider still links automatically', async () => {
    const owner = await createTestUser(db(), { email: uniqueEmail('fresh') });
    const account = upstream.addAccount({
      sub: `upstream-${crypto.randomBytes(6).toString('hex')}`,
      email: owner.email!,
      email_verified: true,
    });
    expect((await signInThroughUpstream(account)).signedIn).toBe(true);
    expect(await linkedMethods(account.sub)).toMatchObject([{ user_id: owner.id }]);
  });
});
