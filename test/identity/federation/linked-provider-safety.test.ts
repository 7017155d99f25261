import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser, uniqueEmail } from '../../support/fixtures.js';
import { HttpBrowser, pageText } from '../../support/http-browser.js';
import type { TestService } from '../../support/test-service.js';
import type { UpstreamAccount, UpstreamProvider } from '../../support/upstream-provider.js';
import { IdentityClient } from '../support/identity-client.js';
import { startServiceWithUpstream } from '../../support/service-with-upstream.js';

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

function newUpstreamAccount(claims: Partial<UpstreamAccount> = {}): UpstreamAccount {
  return upstream.addAccount({
    sub: `upstream-${crypto.randomBytes(6).toString('hex')}`,
    email: uniqueEmail('federated'),
    email_verified: true,
    ...claims,
  });
}

const linkedMethods = (subject: string) =>
  db()('user_auth_methods').where({ type: 'oauth_provider', external_subject: subject });

/** The security notices a contact received, as [purpose, first line]. */
const noticesTo = (to: string) =>
  service.service.developmentMessages
    .messagesTo(to)
    .filter((message) => message.purpose?.startsWith('security_notice.auth_method'))
    .map((message) => [message.purpose, message.text.split('\n')[0]]);

/** POST /security/linked-providers from a browser: the address of the provider, this browser's cookie set. */
async function beginLink(browser: HttpBrowser, accessToken: string) {
  const started = await browser.request('/api/v2/identity/security/linked-providers', {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'upstream', returnTo: '/en/auth?linked=1' }),
  });
  expect(started.status, started.html).toBe(200);
  return (JSON.parse(started.html) as { authorizationUrl: string }).authorizationUrl;
}

/** The browser's trip through the upstream as `account`, back to our callback. */
async function throughUpstream(browser: HttpBrowser, authorizationUrl: string, account: UpstreamAccount) {
  upstream.script({ account: account.sub });
  const back = await new HttpBrowser(upstream.issuer).navigate(authorizationUrl);
  return browser.navigate(back.url);
}

/** A sign-in through the provider's button outside an interaction (the /:lang/auth page). */
async function signInThroughUpstream(account: UpstreamAccount) {
  const browser = new HttpBrowser(service.issuer);
  upstream.script({ account: account.sub });
  const toUpstream = await browser.navigate('/oauth/providers/upstream/start?return_to=%2Fen%2Fauth');
  const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
  return browser.navigate(back.url);
}

describe('the owner is told when a provider account becomes a way into theirs', () => {
  it('a provider linked from the security settings, then unlinked', async () => {
    const owner = await createTestUser(db());
    const login = await identity.login(owner.email!, owner.password);
    const browser = new HttpBrowser(service.issuer);
    const account = newUpstreamAccount({ email: uniqueEmail('someone-else'), email_verified: false });
    const landed = await throughUpstream(browser, await beginLink(browser, login.accessToken), account);
    expect(landed.url).toBe(`${service.issuer}/en/auth?linked=1`);
    const [link] = await linkedMethods(account.sub);
    expect(link).toMatchObject({ user_id: owner.id });

    const unlinked = await identity.delete(`/security/linked-providers/${link.id}`, {
      token: login.accessToken,
    });
    expect(unlinked.status).toBe(200);
    expect(noticesTo(owner.email!)).toEqual([
      [
        'security_notice.auth_method_added',
        'The sign-in method “Sign-in with another service” was added to your account.',
      ],
      [
        'security_notice.auth_method_removed',
        'The sign-in method “Sign-in with another service” was turned off or removed from your account.',
      ],
    ]);
  });

  it('a provider linked at sign-in because it vouched for the account’s email', async () => {
    const owner = await createTestUser(db());
    const account = newUpstreamAccount({ email: owner.email!, email_verified: true });
    expect((await signInThroughUpstream(account)).url).toBe(`${service.issuer}/en/auth`);
    expect(await linkedMethods(account.sub)).toMatchObject([{ user_id: owner.id }]);
    expect(noticesTo(owner.email!)).toEqual([
      [
        'security_notice.auth_method_added',
        'The sign-in method “Sign-in with another service” was added to your account.',
      ],
    ]);
    // The next sign-in with the linked account adds nothing: nothing more to tell.
    await signInThroughUpstream(account);
    expect(noticesTo(owner.email!)).toHaveLength(1);
  });
});

describe('a link begun by a session links nothing once that session has ended', () => {
  it('the owner changed the password meanwhile (every other session signed out)', async () => {
    const owner = await createTestUser(db());
    // Someone holding a session of the owner's (and the password, for the re-authentication) begins a link.
    const intruder = await identity.login(owner.email!, owner.password);
    const browser = new HttpBrowser(service.issuer);
    const authorizationUrl = await beginLink(browser, intruder.accessToken);

    // The owner notices and changes the password: every other session of the account ends.
    const ownerLogin = await identity.login(owner.email!, owner.password);
    const changed = await identity.post(
      '/auth/password/change',
      {
        currentPassword: owner.password,
        newPassword: 'a brand new passphrase of mine',
        newPasswordConfirmation: 'a brand new passphrase of mine',
      },
      { token: ownerLogin.accessToken },
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);

    // The intruder's trip through the provider comes back afterwards: no way in is added.
    const account = newUpstreamAccount({ email: uniqueEmail('intruder'), email_verified: false });
    const landed = await throughUpstream(browser, authorizationUrl, account);
    expect(landed.status).toBe(400);
    expect(pageText(landed, 'error-code')).toBe('expired_attempt');
    expect(await linkedMethods(account.sub)).toEqual([]);
  });

  it('the session was signed out', async () => {
    const owner = await createTestUser(db());
    const login = await identity.login(owner.email!, owner.password);
    const browser = new HttpBrowser(service.issuer);
    const authorizationUrl = await beginLink(browser, login.accessToken);
    const loggedOut = await identity.post('/auth/logout', undefined, { cookie: login.refreshCookie });
    expect(loggedOut.status).toBe(200);

    const account = newUpstreamAccount();
    const landed = await throughUpstream(browser, authorizationUrl, account);
    expect(pageText(landed, 'error-code')).toBe('expired_attempt');
    expect(await linkedMethods(account.sub)).toEqual([]);
  });
});

describe('a provider’s address is matched only as written', () => {
  it('an address with the Kelvin sign (K) is not the account whose address has a k there', async () => {
    // U+212A lower-cases to an ASCII "k": a mailbox the provider confirmed is not the owner's.
    const owner = await createTestUser(db(), {
      email: `kate-${crypto.randomBytes(4).toString('hex')}@example.com`,
    });
    const lookalike = `\u212A${owner.email!.slice(1)}`;
    const account = newUpstreamAccount({ email: lookalike, email_verified: true });
    expect((await signInThroughUpstream(account)).url).toBe(`${service.issuer}/en/auth`);

    const [link] = await linkedMethods(account.sub);
    expect(link.user_id).not.toBe(owner.id);
    // The new account keeps no address that could be taken for the owner's.
    expect(await db()('users').where({ id: link.user_id }).first('email')).toEqual({ email: null });
  });

  it('the API refuses such an address as an identifier', async () => {
    const started = await identity.start('registration');
    const refused = await identity.step(started.sessionId, 'phone-email', {
      identifier: '\u212Aate@example.com',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_identifier');
  });
});
