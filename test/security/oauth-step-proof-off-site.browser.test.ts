import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { launchChromium } from '../support/browser.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { discover } from '../support/relying-party.js';
import { startServiceWithUpstream } from '../support/service-with-upstream.js';
import type { TestService } from '../support/test-service.js';
import type { UpstreamProvider } from '../support/upstream-provider.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

// A funnel's `oauth` step hands the provider's answer to the flow only with the proof the callback
// gives the browser that went through the provider (docs/federation.md). Whoever holds a flow (an API
// flow: anyone can start one) sends its start address to someone signed in at the provider, with a
// return address of this service of their choosing. The proof must stay with that person's browser:
// a return address with a fragment put the proof into the fragment, which a browser carries across
// every redirect that has none of its own, e.g. /oauth/authorize's redirect to any registered client.
let service: TestService;
let upstream: UpstreamProvider;
let browser: Browser;
let client: IdentityClient;
let authorizationEndpoint: string;
let thirdPartyClientId: string;
// The third party's site: its callback page is theirs to read, the fragment included.
let thirdParty: http.Server;
let callbackUri: string;

const oauthOnly: FunnelStep[] = [
  { stepId: 'oauth', mandatory: true, order: 10, settings: { provider: 'upstream' } },
];
const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

beforeAll(async () => {
  ({ service, upstream } = await startServiceWithUpstream({
    env: { TRUST_PROXY: 'true' },
    upstreamScopes: ['openid', 'email', 'profile'],
  }));
  client = new IdentityClient(service);
  thirdParty = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>third party</h1>');
  });
  await new Promise<void>((resolve) => thirdParty.listen(0, '127.0.0.1', resolve));
  callbackUri = `http://127.0.0.1:${(thirdParty.address() as AddressInfo).port}/callback`;
  // Any registered application will do: the attacker's own, or one whose callback page they can read.
  const { client: registered } = await createTestClient(service.service.db, { redirectUris: [callbackUri] });
  thirdPartyClientId = registered.clientId;
  authorizationEndpoint = (await discover(service.issuer, registered.clientId)).serverMetadata()
    .authorization_endpoint!;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
  await upstream?.close();
  thirdParty?.close();
});
afterEach(() => replaceFunnel(service.service.db, 'login', baseLogin, new Date()));

const atThirdParty = (url: URL) => url.href.startsWith(callbackUri);

describe('the proof of a funnel’s oauth step stays with the browser that went through the provider', () => {
  it('a return address with a fragment does not carry it off to another site', async () => {
    await replaceFunnel(service.service.db, 'login', oauthOnly, new Date());
    const victim = await createTestUser(service.service.db);
    const atProvider = upstream.addAccount({
      sub: `victim-${crypto.randomBytes(6).toString('hex')}`,
      email: victim.email!,
      email_verified: true,
    });

    // The attacker's flow, through the API.
    const ip = randomIp();
    const started = await client.start('login', { ip });
    expect(started.nextStep).toBe('oauth');
    const { startUrl } = started.screen[0]!.data!.oauth as { startUrl: string };
    const authorize = new URL(authorizationEndpoint);
    const returnTo =
      `${authorize.pathname}?` +
      new URLSearchParams({
        client_id: thirdPartyClientId,
        redirect_uri: callbackUri,
        response_type: 'code',
        scope: 'openid',
        prompt: 'none',
      }).toString() +
      '#';
    const link = `${startUrl}&${new URLSearchParams({ return_to: returnTo })}`;

    // The victim opens the link; they are signed in at the provider.
    const context = await browser.newContext();
    const page = await context.newPage();
    upstream.script({ account: atProvider.sub });
    await page.goto(link);
    await page.waitForURL(atThirdParty);
    // What the page at the client's address reads: its location, the fragment included.
    const seen = new URL(page.url());
    await context.close();
    expect(seen.href.startsWith(callbackUri)).toBe(true);
    const leaked = /oauth_proof=([\w-]+)/.exec(seen.hash)?.[1];
    // Whatever reached that site signs nobody in to the attacker's flow.
    const taken = await client.step(started.sessionId, 'oauth', leaked ? { proof: leaked } : {}, { ip });
    expect({ status: taken.body.status, userId: taken.body.userId }).not.toEqual({
      status: 'completed',
      userId: victim.id,
    });
    expect(taken.body.error).toBe('oauth_pending');
    expect(seen.hash).not.toContain('oauth_proof');
  });
});
