import * as oidc from 'openid-client';
import { fetchOutsideRequests } from '../../outside-requests.js';
import { FederationError } from './federation-error.js';
import type { OAuthProvider } from './oauth-provider-config.js';
import { idTokenWithUserinfo, mapUpstreamClaims, type UpstreamIdentity } from './upstream-identity.js';

/** What the browser must bring back to the callback: kept in the signed attempt cookie, never sent upstream. */
export interface UpstreamChecks {
  state: string;
  nonce?: string | undefined;
  codeVerifier: string;
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Plain http is refused except on this machine (a provider under test, a development setup). */
function allowsHttp(address: string | undefined): boolean {
  if (!address) return false;
  const url = new URL(address);
  return url.protocol === 'https:' || loopbackHosts.has(url.hostname);
}

/**
 * The relying-party side of one provider, through openid-client (PKCE S256, state, nonce, the
 * id_token checked against the provider's JWKS; no hand-written JOSE). The provider's metadata is
 * discovered once and kept; a failed discovery is tried again at the next sign-in.
 */
export class UpstreamClient {
  #configuration: Promise<oidc.Configuration> | undefined;

  constructor(
    readonly provider: OAuthProvider,
    private readonly redirectUri: string,
  ) {}

  async #config(): Promise<oidc.Configuration> {
    this.#configuration ??= this.#discover().catch((error: unknown) => {
      this.#configuration = undefined;
      throw error;
    });
    return this.#configuration;
  }

  async #discover(): Promise<oidc.Configuration> {
    const { provider } = this;
    const auth = provider.clientSecret ? oidc.ClientSecretBasic(provider.clientSecret) : oidc.None();
    const address = provider.kind === 'oidc' ? provider.issuer : provider.tokenEndpoint;
    const insecure = allowsHttp(address) && new URL(address!).protocol === 'http:';
    if (!allowsHttp(address)) {
      throw new FederationError('upstream_unavailable', `${provider.id} must be served over https`);
    }
    if (provider.kind === 'oidc') {
      try {
        return await oidc.discovery(new URL(provider.issuer!), provider.clientId, undefined, auth, {
          // The id_token's signature is checked against the provider's JWKS even though it came
          // straight from the token endpoint (openid-client trusts TLS there unless told otherwise).
          execute: [...(insecure ? [oidc.allowInsecureRequests] : []), oidc.enableNonRepudiationChecks],
          timeout: 10,
          // Kept for the configuration's later requests too: its kept-alive connections must not keep
          // the sign-in request that opened them.
          [oidc.customFetch]: fetchOutsideRequests,
        });
      } catch (error) {
        throw new FederationError('upstream_unavailable', `discovery of ${provider.id}: ${String(error)}`);
      }
    }
    const config = new oidc.Configuration(
      {
        issuer: new URL(provider.authorizationEndpoint!).origin,
        authorization_endpoint: provider.authorizationEndpoint!,
        token_endpoint: provider.tokenEndpoint!,
      },
      provider.clientId,
      undefined,
      auth,
    );
    config[oidc.customFetch] = fetchOutsideRequests;
    if (insecure) oidc.allowInsecureRequests(config);
    return config;
  }

  /** The address to send the browser to, and the checks its return must pass. */
  async authorizationRequest(): Promise<{ url: URL; checks: UpstreamChecks }> {
    const config = await this.#config();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = this.provider.kind === 'oidc' ? oidc.randomNonce() : undefined;
    const url = oidc.buildAuthorizationUrl(config, {
      ...this.provider.authorizationParameters,
      redirect_uri: this.redirectUri,
      scope: this.provider.scopes.join(' '),
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      ...(nonce ? { nonce } : {}),
    });
    return { url, checks: { state, nonce, codeVerifier } };
  }

  /** Redeems the code of the callback (`currentUrl`) and answers who the person is. */
  async identify(currentUrl: URL, checks: UpstreamChecks): Promise<UpstreamIdentity> {
    const config = await this.#config();
    const claims: Record<string, unknown> = {};
    try {
      // VK ID's token request needs the device_id its callback carries.
      const deviceId = currentUrl.searchParams.get('device_id');
      const tokens = await oidc.authorizationCodeGrant(
        config,
        currentUrl,
        {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          ...(checks.nonce ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}),
        },
        { redirect_uri: this.redirectUri, ...(deviceId ? { device_id: deviceId } : {}) },
      );
      if (this.provider.kind === 'oidc') {
        const idToken = tokens.claims()!;
        const userinfo = config.serverMetadata().userinfo_endpoint
          ? await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub)
          : {};
        Object.assign(claims, idTokenWithUserinfo(idToken, userinfo, this.provider.claims));
      } else {
        Object.assign(claims, await this.#profile(config, tokens.access_token));
      }
    } catch (error) {
      throw asFederationError(error);
    }
    const identity = mapUpstreamClaims(claims, this.provider.claims);
    if (!identity) throw new FederationError('missing_subject', `${this.provider.id} sent no subject`);
    return identity;
  }

  /** Plain OAuth 2.0: the profile from the provider's user-info endpoint. */
  async #profile(config: oidc.Configuration, accessToken: string): Promise<Record<string, unknown>> {
    const userinfo = this.provider.userinfo!;
    const url = new URL(userinfo.url);
    let response: Response;
    if (userinfo.auth === 'form') {
      const body = new URLSearchParams({ access_token: accessToken, client_id: this.provider.clientId });
      response = await fetchOutsideRequests(url, {
        method: 'POST',
        body,
        signal: AbortSignal.timeout(10_000),
      });
    } else if (userinfo.auth === 'oauth') {
      response = await fetchOutsideRequests(url, {
        headers: { authorization: `OAuth ${accessToken}`, accept: 'application/json' },
        signal: AbortSignal.timeout(10_000),
      });
    } else {
      response = await oidc.fetchProtectedResource(config, accessToken, url, 'GET');
    }
    if (!response.ok) throw new FederationError('upstream_error', `user info answered ${response.status}`);
    const profile = (await response.json()) as Record<string, unknown>;
    if (userinfo.emailsUrl)
      Object.assign(profile, await this.#verifiedEmail(config, accessToken, userinfo.emailsUrl));
    return profile;
  }

  /** GitHub: the primary address and whether GitHub verified it. */
  async #verifiedEmail(config: oidc.Configuration, accessToken: string, emailsUrl: string) {
    const response = await oidc.fetchProtectedResource(config, accessToken, new URL(emailsUrl), 'GET');
    if (!response.ok) return {};
    const emails = (await response.json()) as { email?: string; primary?: boolean; verified?: boolean }[];
    const primary = Array.isArray(emails) ? emails.find((entry) => entry.primary) : undefined;
    return primary?.email ? { email: primary.email, email_verified: primary.verified === true } : {};
  }
}

/** openid-client's (oauth4webapi's) failures, as the reasons a person can be told. */
export function asFederationError(error: unknown): FederationError {
  if (error instanceof FederationError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  if (error instanceof oidc.AuthorizationResponseError) {
    return new FederationError(error.error === 'access_denied' ? 'denied' : 'upstream_error', detail);
  }
  if (error instanceof oidc.ResponseBodyError) {
    return new FederationError(error.error === 'invalid_grant' ? 'expired_code' : 'upstream_error', detail);
  }
  // openid-client wraps oauth4webapi's error (the one saying which check failed) in `cause`.
  const original = (error as { cause?: unknown }).cause;
  const inner = original instanceof Error && 'code' in original ? original : error;
  const code = (inner as { code?: string }).code;
  const message = inner instanceof Error ? inner.message : detail;
  const claim = (inner as { cause?: { claim?: string } }).cause?.claim;
  if (code === 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' && claim === 'nonce') {
    return new FederationError('bad_nonce', message);
  }
  if (code === 'OAUTH_INVALID_RESPONSE' && message.includes('"state"')) {
    return new FederationError('bad_state', message);
  }
  if (code === 'OAUTH_KEY_SELECTION_FAILED' || message.includes('signature verification failed')) {
    return new FederationError('jwks_mismatch', message);
  }
  if (error instanceof TypeError || (error as { name?: string }).name === 'TimeoutError') {
    return new FederationError('upstream_unavailable', detail);
  }
  return new FederationError('upstream_error', detail);
}
