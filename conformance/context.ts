import * as oidc from 'openid-client';
import { PageBrowser } from './browser.js';
import { politeFetch } from './polite-fetch.js';

/** What the self-check needs of a deployment: a registered client and a user it can sign in as. */
export interface Deployment {
  issuer: URL;
  /** One or more registered clients; modules take them in turn (each client has its own rate limits). */
  clients: { id: string; secret: string }[];
  redirectUri: string;
  postLogoutRedirectUri: string | undefined;
  username: string;
  password: string;
}

export interface Authorization {
  callback: URL;
  codeVerifier: string;
  state: string;
  nonce: string;
}

/** Thrown by a module: the reason printed on its line. */
export class ModuleFailure extends Error {}

export function check(condition: unknown, reason: string): asserts condition {
  if (!condition) throw new ModuleFailure(reason);
}

/** One OpenID Foundation test module, replayed with openid-client (a certified relying-party library). */
export interface ConformanceModule {
  id: string;
  plan: 'Basic OP' | 'Config OP' | 'RP-Initiated Logout';
  run(context: ConformanceContext): Promise<void>;
}

export class ConformanceContext {
  private constructor(
    readonly deployment: Deployment & { clientId: string },
    readonly config: oidc.Configuration,
    readonly postConfig: oidc.Configuration,
  ) {}

  static async discover(deployment: Deployment): Promise<ConformanceContext[]> {
    const metadata = (
      await oidc.discovery(deployment.issuer, deployment.clients[0]!.id, undefined, oidc.None(), {
        execute: deployment.issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
      })
    ).serverMetadata();
    const configure = (clientId: string, auth: oidc.ClientAuth) => {
      const config = new oidc.Configuration(metadata, clientId, undefined, auth);
      if (deployment.issuer.protocol === 'http:') oidc.allowInsecureRequests(config);
      config[oidc.customFetch] = (url, options) => politeFetch(url, options as RequestInit);
      return config;
    };
    return deployment.clients.map(
      (client) =>
        new ConformanceContext(
          { ...deployment, clientId: client.id },
          configure(client.id, oidc.ClientSecretBasic(client.secret)),
          configure(client.id, oidc.ClientSecretPost(client.secret)),
        ),
    );
  }

  get metadata(): oidc.ServerMetadata {
    return this.config.serverMetadata();
  }

  newBrowser(): PageBrowser {
    return new PageBrowser(this.deployment.issuer.origin);
  }

  /** An authorization request of the code flow with PKCE, state and nonce; `parameters` added or overriding. */
  async authorizationUrl(parameters: Record<string, string> = {}) {
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(this.config, {
      redirect_uri: this.deployment.redirectUri,
      scope: 'openid',
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...parameters,
    });
    for (const [name, value] of Object.entries(parameters)) if (value === '') url.searchParams.delete(name);
    return { url, codeVerifier, state, nonce };
  }

  /**
   * Drives the sign-in (and consent) pages until the provider sends the browser back to the client.
   * `method` POST sends the request form-serialized (OpenID Connect Core §3.1.2.1) instead of by GET.
   */
  async authorize(
    parameters: Record<string, string> = {},
    browser = this.newBrowser(),
    method: 'GET' | 'POST' = 'GET',
  ): Promise<Authorization & { pagesShown: string[] }> {
    const request = await this.authorizationUrl(parameters);
    const pagesShown: string[] = [];
    let page =
      method === 'GET'
        ? await browser.navigate(request.url.toString())
        : await browser.navigate(`${request.url.origin}${request.url.pathname}`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: request.url.searchParams.toString(),
          });
    for (let steps = 0; steps < 6 && !page.url.startsWith(this.deployment.redirectUri); steps++) {
      if (page.html.includes('name="identifier"')) {
        pagesShown.push('identifier');
        page = await browser.submit(page, { identifier: this.deployment.username });
      } else if (page.html.includes('name="password"')) {
        pagesShown.push('password');
        page = await browser.submit(page, { password: this.deployment.password });
      } else if (page.html.includes('name="decision"')) {
        pagesShown.push('consent');
        page = await browser.submit(page, { decision: 'allow' });
      } else {
        throw new ModuleFailure(`the authorization ended on ${page.url} (${page.status}), not at the client`);
      }
    }
    check(page.url.startsWith(this.deployment.redirectUri), `the authorization ended on ${page.url}`);
    return { ...request, callback: new URL(page.url), pagesShown };
  }

  /** Redeems the code as openid-client does: validates state, nonce, the ID token's signature and claims. */
  redeem(authorization: Authorization, config = this.config) {
    return oidc.authorizationCodeGrant(config, authorization.callback, {
      pkceCodeVerifier: authorization.codeVerifier,
      expectedState: authorization.state,
      expectedNonce: authorization.nonce,
    });
  }
}
