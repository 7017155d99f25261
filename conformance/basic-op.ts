import * as oidc from 'openid-client';
import { check, ModuleFailure, type ConformanceContext, type ConformanceModule } from './context.js';

/** The OIDF Basic OP plan's modules that apply to a code-flow-only provider. */

const signedIn = async (context: ConformanceContext, parameters: Record<string, string> = {}) => {
  const browser = context.newBrowser();
  const first = await context.authorize(parameters, browser);
  return { browser, first, tokens: await context.redeem(first) };
};

async function expectTokenError(promise: Promise<unknown>, error: string, what: string): Promise<void> {
  try {
    await promise;
  } catch (caught) {
    if (caught instanceof oidc.ResponseBodyError && caught.error === error) return;
    throw new ModuleFailure(`${what}: expected ${error}, got ${(caught as Error).message}`);
  }
  throw new ModuleFailure(`${what}: accepted`);
}

/** The request is refused: an error page at the provider, or the client's redirect_uri with ?error=. */
async function expectAuthorizationError(
  context: ConformanceContext,
  url: URL,
  error: string | undefined,
  what: string,
): Promise<void> {
  const page = await context.newBrowser().navigate(url.toString());
  if (page.url.startsWith(context.deployment.redirectUri)) {
    const answered = new URL(page.url).searchParams;
    check(!answered.has('code'), `${what}: a code was issued`);
    if (error)
      check(answered.get('error') === error, `${what}: error=${answered.get('error')}, expected ${error}`);
    return;
  }
  check(page.status >= 400, `${what}: answered ${page.status} at ${page.url}`);
}

const scopeModule = (id: string, scope: string, claims: string[]): ConformanceModule => ({
  id,
  plan: 'Basic OP',
  async run(context) {
    const { tokens } = await signedIn(context, { scope });
    const subject = tokens.claims()!.sub;
    const userinfo = await oidc.fetchUserInfo(context.config, tokens.access_token, subject);
    const missing = claims.filter((claim) => !(claim in userinfo) && !(claim in tokens.claims()!));
    check(missing.length === 0, `scope ${scope}: no ${missing.join(', ')} in the ID token or userinfo`);
  },
});

export const basicOpModules: ConformanceModule[] = [
  {
    id: 'oidcc-server',
    plan: 'Basic OP',
    async run(context) {
      const { tokens } = await signedIn(context);
      const claims = tokens.claims()!;
      check(claims.iss === context.metadata.issuer, 'the ID token’s iss is not the issuer');
      check(typeof claims.sub === 'string' && claims.sub.length > 0, 'no sub in the ID token');
      check(tokens.token_type.toLowerCase() === 'bearer', `token_type ${tokens.token_type}`);
    },
  },
  {
    id: 'oidcc-response-type-missing',
    plan: 'Basic OP',
    async run(context) {
      const { url } = await context.authorizationUrl({ response_type: '' });
      await expectAuthorizationError(context, url, undefined, 'an authorization without response_type');
    },
  },
  {
    id: 'oidcc-userinfo-get',
    plan: 'Basic OP',
    async run(context) {
      const { tokens } = await signedIn(context);
      const userinfo = await oidc.fetchUserInfo(context.config, tokens.access_token, tokens.claims()!.sub);
      check(userinfo.sub === tokens.claims()!.sub, 'userinfo sub differs from the ID token’s');
    },
  },
  {
    id: 'oidcc-userinfo-post-header',
    plan: 'Basic OP',
    async run(context) {
      const { tokens } = await signedIn(context);
      const response = await oidc.fetchProtectedResource(
        context.config,
        tokens.access_token,
        new URL(context.metadata.userinfo_endpoint!),
        'POST',
      );
      check(response.status === 200, `POST userinfo with the header answered ${response.status}`);
      check(((await response.json()) as { sub?: string }).sub === tokens.claims()!.sub, 'wrong sub');
    },
  },
  {
    id: 'oidcc-userinfo-post-body',
    plan: 'Basic OP',
    async run(context) {
      const { tokens } = await signedIn(context);
      const response = await fetch(context.metadata.userinfo_endpoint!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ access_token: tokens.access_token }),
      });
      // RFC 6750 2.2 is optional: answering it, or refusing it with the RFC's error, both pass.
      if (response.status === 200) {
        check(((await response.json()) as { sub?: string }).sub === tokens.claims()!.sub, 'wrong sub');
      } else {
        check(response.status === 400 || response.status === 401, `answered ${response.status}`);
      }
    },
  },
  {
    id: 'oidcc-ensure-request-with-valid-pkce-succeeds',
    plan: 'Basic OP',
    async run(context) {
      // authorize() sends an S256 code_challenge; redeem() the matching code_verifier.
      const tokens = await context.redeem(await context.authorize());
      check(tokens.claims()?.sub, 'no ID token for a request with a valid PKCE challenge');
      const replayed = await context.authorize();
      await expectTokenError(
        oidc.authorizationCodeGrant(context.config, replayed.callback, {
          pkceCodeVerifier: oidc.randomPKCECodeVerifier(),
          expectedState: replayed.state,
          expectedNonce: replayed.nonce,
        }),
        'invalid_grant',
        'a code redeemed with another code_verifier',
      );
    },
  },
  {
    id: 'oidcc-ensure-post-request-succeeds',
    plan: 'Basic OP',
    async run(context) {
      const authorization = await context.authorize({}, context.newBrowser(), 'POST');
      const tokens = await context.redeem(authorization);
      check(tokens.claims()?.sub, 'no ID token for an authorization request sent by POST');
    },
  },
  {
    id: 'oidcc-ensure-request-without-nonce-succeeds-for-code-flow',
    plan: 'Basic OP',
    async run(context) {
      const authorization = await context.authorize({ nonce: '' });
      const tokens = await oidc.authorizationCodeGrant(context.config, authorization.callback, {
        pkceCodeVerifier: authorization.codeVerifier,
        expectedState: authorization.state,
      });
      check(tokens.claims()?.nonce === undefined, 'an ID token with a nonce nobody sent');
    },
  },
  scopeModule('oidcc-scope-profile', 'openid profile', []),
  scopeModule('oidcc-scope-email', 'openid email', ['email', 'email_verified']),
  scopeModule('oidcc-scope-phone', 'openid phone', []),
  scopeModule('oidcc-scope-all', 'openid profile email phone', ['email']),
  {
    id: 'oidcc-ensure-other-scope-order-succeeds',
    plan: 'Basic OP',
    async run(context) {
      const { tokens } = await signedIn(context, { scope: 'email openid' });
      check(tokens.claims()!.sub, 'no ID token for scope "email openid"');
    },
  },
  {
    id: 'oidcc-display-page',
    plan: 'Basic OP',
    async run(context) {
      await signedIn(context, { display: 'page' });
    },
  },
  {
    id: 'oidcc-display-popup',
    plan: 'Basic OP',
    async run(context) {
      await signedIn(context, { display: 'popup' });
    },
  },
  {
    id: 'oidcc-prompt-login',
    plan: 'Basic OP',
    async run(context) {
      const { browser, tokens } = await signedIn(context);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const again = await context.authorize({ prompt: 'login' }, browser);
      check(again.pagesShown.includes('password'), 'prompt=login signed in without asking for credentials');
      const second = await context.redeem(again);
      check(second.claims()!.auth_time! > tokens.claims()!.auth_time!, 'auth_time did not move');
    },
  },
  {
    id: 'oidcc-prompt-none-not-logged-in',
    plan: 'Basic OP',
    async run(context) {
      const { url } = await context.authorizationUrl({ prompt: 'none' });
      const page = await context.newBrowser().navigate(url.toString());
      check(page.url.startsWith(context.deployment.redirectUri), `prompt=none ended on ${page.url}`);
      const error = new URL(page.url).searchParams.get('error');
      check(
        ['login_required', 'interaction_required', 'consent_required'].includes(error ?? ''),
        `prompt=none without a session answered error=${error}`,
      );
    },
  },
  {
    id: 'oidcc-prompt-none-logged-in',
    plan: 'Basic OP',
    async run(context) {
      const { browser } = await signedIn(context);
      const again = await context.authorize({ prompt: 'none' }, browser);
      check(again.pagesShown.length === 0, 'prompt=none showed a page');
      await context.redeem(again);
    },
  },
  {
    id: 'oidcc-max-age-1',
    plan: 'Basic OP',
    async run(context) {
      const { browser } = await signedIn(context);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const again = await context.authorize({ max_age: '1' }, browser);
      check(again.pagesShown.includes('password'), 'max_age=1 signed in without asking for credentials');
      const tokens = await context.redeem(again);
      check(typeof tokens.claims()!.auth_time === 'number', 'no auth_time in the ID token');
    },
  },
  {
    id: 'oidcc-max-age-10000',
    plan: 'Basic OP',
    async run(context) {
      const { browser } = await signedIn(context);
      const again = await context.authorize({ max_age: '10000' }, browser);
      check(!again.pagesShown.includes('password'), 'max_age=10000 asked for credentials again');
      check(typeof (await context.redeem(again)).claims()!.auth_time === 'number', 'no auth_time');
    },
  },
  {
    id: 'oidcc-id-token-hint',
    plan: 'Basic OP',
    async run(context) {
      const { browser, tokens } = await signedIn(context);
      const again = await context.authorize({ prompt: 'none', id_token_hint: tokens.id_token! }, browser);
      const second = await context.redeem(again);
      check(second.claims()!.sub === tokens.claims()!.sub, 'another subject');
    },
  },
  {
    id: 'oidcc-login-hint',
    plan: 'Basic OP',
    async run(context) {
      await signedIn(context, { login_hint: context.deployment.username });
    },
  },
  {
    id: 'oidcc-ui-locales',
    plan: 'Basic OP',
    async run(context) {
      await signedIn(context, { ui_locales: 'se' });
    },
  },
  {
    id: 'oidcc-claims-locales',
    plan: 'Basic OP',
    async run(context) {
      await signedIn(context, { claims_locales: 'se' });
    },
  },
  {
    id: 'oidcc-ensure-request-with-acr-values-succeeds',
    plan: 'Basic OP',
    async run(context) {
      await signedIn(context, { acr_values: '1 2' });
    },
  },
  {
    id: 'oidcc-ensure-request-with-unknown-parameter-succeeds',
    plan: 'Basic OP',
    async run(context) {
      await signedIn(context, { extra: 'foobar' });
    },
  },
  {
    id: 'oidcc-codereuse',
    plan: 'Basic OP',
    async run(context) {
      const { first } = await signedIn(context);
      await expectTokenError(context.redeem(first), 'invalid_grant', 'the code redeemed a second time');
    },
  },
  {
    id: 'oidcc-ensure-registered-redirect-uri',
    plan: 'Basic OP',
    async run(context) {
      const { url } = await context.authorizationUrl({
        redirect_uri: 'https://unregistered.example/callback',
      });
      const page = await context.newBrowser().navigate(url.toString());
      check(
        !page.url.startsWith('https://unregistered.example'),
        'redirected to an unregistered redirect_uri',
      );
      check(page.status >= 400, `answered ${page.status}`);
    },
  },
  {
    id: 'oidcc-ensure-redirect-uri-in-authorization-request',
    plan: 'Basic OP',
    async run(context) {
      const { url } = await context.authorizationUrl({ redirect_uri: '' });
      const page = await context.newBrowser().navigate(url.toString());
      // With one registered redirect_uri the spec lets a provider use it; this one refuses instead (either passes).
      if (page.url.startsWith(context.deployment.redirectUri)) {
        check(!new URL(page.url).searchParams.has('code'), 'a code without a redirect_uri in the request');
      } else {
        check(page.status >= 400, `answered ${page.status}`);
      }
    },
  },
  {
    id: 'oidcc-server-client-secret-post',
    plan: 'Basic OP',
    async run(context) {
      const authorization = await context.authorize();
      await context.redeem(authorization, context.postConfig);
    },
  },
  {
    id: 'oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported',
    plan: 'Basic OP',
    async run(context) {
      const header = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
      const claims = Buffer.from(JSON.stringify({ client_id: context.deployment.clientId })).toString(
        'base64url',
      );
      const { url } = await context.authorizationUrl({ request: `${header}.${claims}.` });
      const page = await context.newBrowser().navigate(url.toString());
      if (page.url.startsWith(context.deployment.redirectUri)) {
        const error = new URL(page.url).searchParams.get('error');
        check(
          error === 'request_not_supported' || error === 'invalid_request_object' || !error,
          `error=${error}`,
        );
      } else {
        check(page.status >= 400 || page.html.includes('name="identifier"'), `answered ${page.status}`);
      }
    },
  },
  {
    id: 'oidcc-refresh-token',
    plan: 'Basic OP',
    async run(context) {
      const { tokens } = await signedIn(context);
      check(tokens.refresh_token, 'no refresh token issued');
      const refreshed = await oidc.refreshTokenGrant(context.config, tokens.refresh_token);
      check(refreshed.access_token !== tokens.access_token, 'the same access token again');
      if (refreshed.id_token) check(refreshed.claims()!.sub === tokens.claims()!.sub, 'another subject');
      await expectTokenError(
        oidc.refreshTokenGrant(context.config, tokens.refresh_token),
        'invalid_grant',
        'the rotated refresh token presented again',
      );
    },
  },
];
