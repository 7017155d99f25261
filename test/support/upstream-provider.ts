import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import type { Middleware } from 'koa';
import Provider from 'oidc-provider';

/** A port free on 127.0.0.1 now: our service must know its callback address before the upstream starts. */
/** What the upstream knows of a person: standard OpenID Connect claims. */
export interface UpstreamAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  phone_number?: string;
  phone_number_verified?: boolean;
  given_name?: string;
  family_name?: string;
  /**
   * What its userinfo endpoint answers instead of the claims above (with the same `sub`): a provider
   * whose ID token and userinfo disagree. The ID token carries the claims above.
   */
  userinfo?: Omit<UpstreamAccount, 'sub' | 'userinfo'>;
}

/** How the upstream answers the next sign-in (the person's choice, or a misbehaving provider). */
export interface UpstreamScript {
  /** Signs in as this account (no forms: the test decides who the person is at the upstream). */
  account?: string;
  /** The person declines: the upstream answers error=access_denied. */
  deny?: boolean;
  /** The upstream puts another nonce in the id_token than the one our service asked for. */
  tamperNonce?: boolean;
}

export interface UpstreamProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  provider: Provider;
  accounts: Map<string, UpstreamAccount>;
  /** Adds (or replaces) an account the upstream can sign in as. */
  addAccount(account: UpstreamAccount): UpstreamAccount;
  /** What the next authorization request does. */
  script(next: UpstreamScript): void;
  /** Lifetime of the codes it issues, in seconds (1: a code expires within the next second). */
  setCodeTtl(seconds: number): void;
  close(): Promise<void>;
}

/**
 * A real OpenID Connect provider on a loopback port (a second oidc-provider instance) for our service
 * to sign in through as a relying party. Its interaction pages are replaced by a script (who signs in,
 * or "declined"), so tests drive it with any browser; `forgeJwks` publishes a key set that does not
 * contain the key its id_tokens are signed with (same kid), as a compromised or misconfigured
 * provider would.
 */
export async function startUpstreamProvider(options: {
  redirectUri: string;
  forgeJwks?: boolean;
}): Promise<UpstreamProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'identity-service';
  const clientSecret = 'upstream-client-secret-0123456789';

  const kid = 'upstream-signing-key';
  const signing = await generateKeyPair('RS256', { extractable: true });
  const forged = await generateKeyPair('RS256', { extractable: true });
  const privateJwk = { ...(await exportJWK(signing.privateKey)), kid, alg: 'RS256', use: 'sig' };
  const forgedPublicJwk = { ...(await exportJWK(forged.publicKey)), kid, alg: 'RS256', use: 'sig' };

  const accounts = new Map<string, UpstreamAccount>();
  let next: UpstreamScript = {};
  let codeTtl = 60;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [privateJwk] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      phone: ['phone_number', 'phone_number_verified'],
      profile: ['given_name', 'family_name'],
    },
    scopes: ['openid', 'email', 'phone', 'profile'],
    features: { devInteractions: { enabled: false } },
    // The ID token carries the claims of its scopes too, as Google's does, not only userinfo.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    cookies: { keys: ['upstream-cookie-key-0123456789abcdefghijklmnop'] },
    ttl: { AuthorizationCode: () => codeTtl },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      if (!account) return undefined;
      const { userinfo, ...claims } = account;
      return {
        accountId: sub,
        claims: (use: string) => (use === 'userinfo' && userinfo ? { sub, ...userinfo } : claims),
      };
    },
  });

  const scripted: Middleware = async (ctx, nextMiddleware) => {
    if (ctx.path.startsWith('/interaction/')) {
      const details = await provider.interactionDetails(ctx.req, ctx.res);
      const script = next;
      if (script.deny) {
        next = {};
        return provider.interactionFinished(ctx.req, ctx.res, {
          error: 'access_denied',
          error_description: 'The person declined to share their account.',
        });
      }
      if (details.prompt.name === 'login') {
        if (!script.account) throw new Error('the upstream script names no account');
        return provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: script.account } });
      }
      next = {};
      const grant = new provider.Grant({
        accountId: details.session!.accountId,
        clientId: String(details.params.client_id),
      });
      grant.addOIDCScope(String(details.params.scope));
      return provider.interactionFinished(
        ctx.req,
        ctx.res,
        { consent: { grantId: await grant.save() } },
        { mergeWithLastSubmission: true },
      );
    }
    if (ctx.path === '/auth' && next.tamperNonce) {
      const query = new URLSearchParams(ctx.querystring);
      query.set('nonce', 'a-nonce-of-another-sign-in');
      ctx.querystring = query.toString();
    }
    if (ctx.path === '/jwks' && options.forgeJwks) {
      ctx.body = { keys: [forgedPublicJwk] };
      return;
    }
    return nextMiddleware();
  };
  provider.middleware.unshift(scripted);
  server.on('request', provider.callback());

  return {
    issuer,
    clientId,
    clientSecret,
    provider,
    accounts,
    addAccount(account) {
      accounts.set(account.sub, account);
      return account;
    },
    script(script) {
      next = script;
    },
    setCodeTtl(seconds) {
      codeTtl = seconds;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
