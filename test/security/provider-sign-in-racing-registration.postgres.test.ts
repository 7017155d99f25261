import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';
import { startServiceWithUpstream } from '../support/service-with-upstream.js';
import type { TestService } from '../support/test-service.js';
import type { UpstreamProvider } from '../support/upstream-provider.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A sign-in through a provider that vouches for an
 * email no account has yet makes a new account (rule 4). An account with that email committed in
 * between (a registration, another provider's sign-in in another tab) made the insert fail on the
 * unique email, and the person got a 500. The sign-in now goes on as if that account had been there
 * first: the provider vouches for its email, so it is linked (rule 2).
 */
let service: TestService;
let upstream: UpstreamProvider;
beforeAll(async () => {
  ({ service, upstream } = await startServiceWithUpstream({
    upstreamScopes: ['openid', 'email', 'profile'],
  }));
});
afterAll(async () => {
  await service?.close();
  await upstream?.close();
});

describe('a provider sign-in making an account racing another account with its email', () => {
  it('is no 500: the account that committed first is the one signed in to', async () => {
    const { db } = service.service;
    const email = uniqueEmail('racing');
    const account = upstream.addAccount({
      sub: `racing-${crypto.randomBytes(6).toString('hex')}`,
      email,
      email_verified: true,
    });
    const browser = new HttpBrowser(service.issuer);
    upstream.script({ account: account.sub });
    const toUpstream = await browser.navigate(
      `/oauth/providers/upstream/start?return_to=${encodeURIComponent('/en/auth?done=1')}`,
    );
    const back = await new HttpBrowser(upstream.issuer).navigate(toUpstream.url);
    expect(back.url).toContain('/oauth/providers/upstream/callback');

    let callback!: ReturnType<HttpBrowser['navigate']>;
    let registered!: string;
    // Another account with that email is being created: the callback found none and waits on its row.
    await db.transaction(async (trx) => {
      const [row] = (await trx('users').insert({ email, email_verified: true }, ['id'])) as { id: string }[];
      registered = row!.id;
      callback = browser.navigate(back.url);
      await untilWaitingForLocks(db, 1, callback);
    });
    const landed = await callback;
    expect(landed.status).toBe(200);
    expect(landed.url).toBe(`${service.issuer}/en/auth?done=1`);
    expect(await db('users').where({ email })).toHaveLength(1);
    expect(await db('user_auth_methods').where({ external_subject: account.sub })).toMatchObject([
      { user_id: registered, type: 'oauth_provider' },
    ]);
  });
});
