import * as oidc from 'openid-client';
import type { PageBrowser } from './browser.js';
import { check, ModuleFailure, type ConformanceContext, type ConformanceModule } from './context.js';

/** The OIDF RP-Initiated Logout plan's modules (against a browser session signed in through the pages). */

async function signedInWithTokens(context: ConformanceContext) {
  const browser = context.newBrowser();
  const tokens = await context.redeem(await context.authorize({}, browser));
  return { browser, tokens };
}

function postLogoutUri(context: ConformanceContext): string {
  const uri = context.deployment.postLogoutRedirectUri;
  if (!uri) throw new ModuleFailure('needs --post-logout-redirect-uri (one registered for the client)');
  return uri;
}

/**
 * Follows the end-session request the way the provider's logout page does: its script posts the
 * one-time xsrf value of the fragment to the confirm endpoint (after a click when confirmation is asked).
 */
async function endSession(
  context: ConformanceContext,
  browser: PageBrowser,
  parameters: Record<string, string>,
) {
  const url = new URL(context.metadata.end_session_endpoint!);
  for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
  let page = await browser.navigate(url.toString());
  const fragment = new URLSearchParams(new URL(page.url).hash.slice(1));
  const xsrf = fragment.get('xsrf');
  if (xsrf && page.html.includes('id="logout"')) {
    page = await browser.submit(
      { ...page, html: page.html.replace('name="xsrf" value=""', `name="xsrf" value="${xsrf}"`) },
      {},
    );
  }
  return page;
}

/** The browser's session is gone: an authorization with prompt=none now answers login_required. */
async function expectSignedOut(context: ConformanceContext, browser: PageBrowser): Promise<void> {
  const { url } = await context.authorizationUrl({ prompt: 'none' });
  const page = await browser.navigate(url.toString());
  const error = new URL(page.url).searchParams.get('error');
  check(error === 'login_required', `after the logout, prompt=none answered ${error ?? page.url}`);
}

/**
 * A logout with the session's own id_token_hint and the registered post-logout URI (plus `extra`):
 * the browser must land on that URI with the session over. Returns where it landed.
 */
async function logOutBackToClient(context: ConformanceContext, extra: Record<string, string> = {}) {
  const { browser, tokens } = await signedInWithTokens(context);
  const page = await endSession(context, browser, {
    id_token_hint: tokens.id_token!,
    post_logout_redirect_uri: postLogoutUri(context),
    ...extra,
  });
  check(
    page.url.startsWith(postLogoutUri(context)),
    `ended on ${page.url}, not the post_logout_redirect_uri`,
  );
  await expectSignedOut(context, browser);
  return new URL(page.url);
}

async function expectStillSignedIn(context: ConformanceContext, browser: PageBrowser): Promise<void> {
  const again = await context.authorize({ prompt: 'none' }, browser);
  check(again.pagesShown.length === 0, 'the session ended');
}

export const rpInitiatedLogoutModules: ConformanceModule[] = [
  {
    id: 'oidcc-rp-initiated-logout-discovery-endpoint-verification',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const endpoint = context.metadata.end_session_endpoint;
      check(endpoint, 'no end_session_endpoint in the discovery document');
      const url = new URL(endpoint);
      check(
        url.origin === context.deployment.issuer.origin,
        `end_session_endpoint ${endpoint} is not the issuer's`,
      );
    },
  },
  {
    id: 'oidcc-rp-initiated-logout',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const landed = await logOutBackToClient(context, { state: 'conformance-state' });
      check(landed.searchParams.get('state') === 'conformance-state', 'state not returned');
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-bad-post-logout-redirect-uri',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser, tokens } = await signedInWithTokens(context);
      const page = await endSession(context, browser, {
        id_token_hint: tokens.id_token!,
        post_logout_redirect_uri: 'https://unregistered.example/logged-out',
      });
      check(!page.url.startsWith('https://unregistered.example'), 'redirected to an unregistered uri');
      check(page.status >= 400, `answered ${page.status}`);
      await expectStillSignedIn(context, browser);
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-modified-id-token-hint',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser, tokens } = await signedInWithTokens(context);
      const [header, payload, signature] = tokens.id_token!.split('.');
      const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
      const modified = Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url');
      const page = await endSession(context, browser, {
        id_token_hint: `${header}.${modified}.${signature}`,
        post_logout_redirect_uri: postLogoutUri(context),
      });
      check(!page.url.startsWith(postLogoutUri(context)), 'a forged id_token_hint was accepted');
      await expectStillSignedIn(context, browser);
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-no-id-token-hint',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser } = await signedInWithTokens(context);
      // Without a hint, a post_logout_redirect_uri can't be trusted: refused, or the user asked to confirm.
      const page = await endSession(context, browser, {
        post_logout_redirect_uri: postLogoutUri(context),
        client_id: context.deployment.clientId,
      });
      if (page.url.startsWith(postLogoutUri(context))) await expectSignedOut(context, browser);
      else check(page.status < 500, `answered ${page.status}`);
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-no-state',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const landed = await logOutBackToClient(context);
      check(!landed.searchParams.has('state'), 'a state nobody sent was added');
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-bad-id-token-hint',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser } = await signedInWithTokens(context);
      const page = await endSession(context, browser, {
        id_token_hint: 'not.an.id-token',
        post_logout_redirect_uri: postLogoutUri(context),
      });
      check(!page.url.startsWith(postLogoutUri(context)), 'an id_token_hint that is no token was accepted');
      check(page.status >= 400 && page.status < 500, `answered ${page.status}`);
      await expectStillSignedIn(context, browser);
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-only-state',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser } = await signedInWithTokens(context);
      const page = await endSession(context, browser, { state: 'only-state' });
      check(!page.url.startsWith(postLogoutUri(context)), 'redirected without a post_logout_redirect_uri');
      check(page.status < 500, `answered ${page.status}`);
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-no-params',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser } = await signedInWithTokens(context);
      const page = await endSession(context, browser, {});
      check(page.status < 500, `answered ${page.status}`);
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-no-post-logout-redirect-uri',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser, tokens } = await signedInWithTokens(context);
      const page = await endSession(context, browser, { id_token_hint: tokens.id_token! });
      check(page.status < 400, `answered ${page.status}`);
      await expectSignedOut(context, browser);
    },
  },
  {
    id: 'oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser, tokens } = await signedInWithTokens(context);
      const page = await endSession(context, browser, {
        id_token_hint: tokens.id_token!,
        post_logout_redirect_uri: `${postLogoutUri(context)}?added=1`,
      });
      check(
        !page.url.includes('added=1'),
        'redirected to a post_logout_redirect_uri not registered as given',
      );
      await expectStillSignedIn(context, browser);
    },
  },
  {
    id: 'idp-logout-revokes-refresh-tokens',
    plan: 'RP-Initiated Logout',
    async run(context) {
      const { browser, tokens } = await signedInWithTokens(context);
      await endSession(context, browser, {
        id_token_hint: tokens.id_token!,
        post_logout_redirect_uri: postLogoutUri(context),
      });
      try {
        await oidc.refreshTokenGrant(context.config, tokens.refresh_token!);
      } catch (error) {
        if (error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant') return;
        throw error;
      }
      throw new ModuleFailure('the refresh token still works after the logout');
    },
  },
];
