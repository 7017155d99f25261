import * as oidc from 'openid-client';
import { callbackUri } from './fixtures.js';
import type { HttpBrowser } from './http-browser.js';
import { type Page } from './http-browser.js';

export type ClientAuth = 'none' | 'client_secret_basic' | 'client_secret_post';

/** An openid-client configuration from the discovery document alone, as any relying party does. */
export async function discover(
  issuer: string,
  clientId: string,
  clientSecret?: string,
  auth: ClientAuth = clientSecret ? 'client_secret_basic' : 'none',
): Promise<oidc.Configuration> {
  const clientAuth =
    auth === 'none'
      ? oidc.None()
      : auth === 'client_secret_post'
        ? oidc.ClientSecretPost(clientSecret!)
        : oidc.ClientSecretBasic(clientSecret!);
  return oidc.discovery(new URL(issuer), clientId, undefined, clientAuth, {
    execute: [oidc.allowInsecureRequests],
  });
}

export interface AuthorizationRequest {
  url: URL;
  codeVerifier: string;
  state: string;
  nonce: string;
}

export async function buildAuthorizationRequest(
  config: oidc.Configuration,
  parameters: Record<string, string> = {},
): Promise<AuthorizationRequest> {
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: callbackUri,
    scope: 'openid profile email',
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...parameters,
  });
  return { url, codeVerifier, state, nonce };
}

export interface SignInOptions {
  identifier: string;
  password: string;
  /** What to answer on the consent screen; `expect-none` fails if it shows. */
  consent?: 'allow' | 'deny' | 'expect-none';
}

/** Drives the login and consent pages over HTTP; returns the page where the service sent the browser. */
export async function signInThroughPages(
  browser: HttpBrowser,
  authorizationUrl: URL | string,
  options: SignInOptions,
): Promise<Page> {
  let page = await browser.navigate(authorizationUrl.toString());
  if (page.html.includes('name="identifier"')) {
    page = await browser.submit(page, { identifier: options.identifier });
    if (!page.html.includes('name="password"'))
      throw new Error(`expected the password page, got:\n${page.html}`);
    page = await browser.submit(page, { password: options.password });
  }
  if (page.html.includes('name="decision"')) {
    if (options.consent === 'expect-none') throw new Error('the consent screen was shown');
    page = await browser.submit(page, { decision: options.consent ?? 'allow' });
  }
  return page;
}

export interface CompletedAuthorization {
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  request: AuthorizationRequest;
  callback: URL;
}

/** The whole code flow: authorize, sign in and consent through the pages, redeem the code. */
export async function completeAuthorization(
  config: oidc.Configuration,
  browser: HttpBrowser,
  options: SignInOptions & { parameters?: Record<string, string> },
): Promise<CompletedAuthorization> {
  const request = await buildAuthorizationRequest(config, options.parameters);
  const page = await signInThroughPages(browser, request.url, options);
  const callback = new URL(page.url);
  if (!page.url.startsWith(callbackUri))
    throw new Error(`expected a redirect to the client, got ${page.url}:\n${page.html}`);
  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: request.codeVerifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
  return { tokens, request, callback };
}

/** An authorization with prompt=none in `browser`: the code, or the error, it came back with. */
export async function silentAuthorization(config: oidc.Configuration, browser: HttpBrowser) {
  const request = await buildAuthorizationRequest(config, { prompt: 'none' });
  const callback = new URL((await browser.navigate(request.url.toString())).url);
  return { code: callback.searchParams.get('code'), error: callback.searchParams.get('error') };
}

export { oidc };
