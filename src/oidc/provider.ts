import { Provider, type Configuration, type Interaction, type KoaContextWithOIDC } from 'oidc-provider';
import { createOidcAdapterFactory, refreshTokenReadAhead } from '../../adapters/oidc/knex-adapter.js';
import { takeAccount } from '../../adapters/oidc/request-prefetch.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { defaults, type ServiceSettings } from '../defaults.js';
import { databaseRetryAfterSeconds, isDatabaseUnavailable } from '../db/database-unavailable.js';
import { ApiError, serviceUnavailable } from '../http/api-error.js';
import { pageErrorText } from '../http/page-error-text.js';
import { renderErrorPage } from '../http/error-handler.js';
import { issuerPath, publicPath } from '../http/base-path.js';
import { renderPage } from '../http/pages.js';
import { pageLanguage } from '../i18n/page-language.js';
import { findUserById } from '../identity/users/user.js';
import { loadUserAccess } from '../identity/access/user-access.js';
import type { SigningKey } from '../keys/signing-keys.js';
import type { Logger } from '../logger.js';
import { claimsForScopes, loadAccount, type Account } from './account-claims.js';
import { installClientCache } from './client-cache.js';
import {
  allowedScopesMetadata,
  allowedScopesOf,
  firstPartyMetadata,
  tokensNotBeforeMetadata,
} from './client-metadata.js';
import { installClientSecretHashing } from './client-secret.js';
import { authPagePath } from './auth-page-path.js';
import { installIdTokenHintTypeCheck } from './id-token-hint-type.js';
import { createInteractionPolicy } from './interaction-policy.js';
import { engineSessionCookieName } from './engine-session-cookie.js';
import { logoutSource, postLogoutSuccessSource } from './logout-pages.js';
import { installExactLocalhostRedirects } from './redirect-uri.js';
import { installRegisteredRedirectAtRedemption } from './registered-redirect-at-redemption.js';
import { loadGrantFromConsent } from './load-existing-grant.js';
import {
  resourceServerInfo,
  serviceAccessTokenTtlSeconds,
  userAccessTokenTtlSeconds,
} from './resource-server.js';
import { claimsByScope, oidcScopes, splitScope } from './scopes.js';
import { installSsoCodeGrant, ssoCodeAuthTime } from './sso/sso-code-grant.js';

export const oauthRoutes = defaults.paths.oauth;

/**
 * Where /oauth/authorize sends a person who must sign in or consent: /:lang/auth with the interaction,
 * in the language of `ui_locales`, else the signed-in user's saved one, else the browser's.
 */
async function interactionUrl(db: Database, ctx: KoaContextWithOIDC, interaction: Interaction) {
  const uiLocales = interaction.params.ui_locales;
  const accountId = interaction.session?.accountId;
  const user = accountId ? await findUserById(db, accountId) : undefined;
  const lang = pageLanguage(ctx as never, {
    uiLocales: typeof uiLocales === 'string' ? uiLocales : undefined,
    userLanguage: user?.language,
  });
  return publicPath(ctx as never, authPagePath(lang, { interaction: interaction.uid }));
}

/** The engine's lifetimes (seconds) by default; a service's `settings.lifetimes` override them. */
export const lifetimes = {
  authorizationCode: defaults.lifetimes.authorizationCode,
  refreshToken: defaults.lifetimes.refreshToken,
  session: defaults.lifetimes.oidcSession,
  interaction: defaults.lifetimes.interaction,
};

export interface OidcProviderDependencies {
  config: Config;
  db: Database;
  clock: Clock;
  cookieKeys: string[];
  signingKey: SigningKey;
  logger: Logger;
  /** Instead of `lifetimes` (seconds). */
  lifetimes?: typeof lifetimes;
  /** Instead of `defaults.clientCache`. */
  clientCache?: ServiceSettings['clientCache'];
}

/** What findAccount returns: the engine's account plus our loaded record, reused for token claims. */
interface ProviderAccount {
  [key: string]: unknown;
  accountId: string;
  account: Account;
  claims(use: string, scope: string): Promise<{ sub: string; [claim: string]: unknown }>;
}

/**
 * The one configuration of the certified engine (oidc-provider). The engine serves authorize, token,
 * revocation, end_session and discovery; our routes placed before it serve the interactions, jwks,
 * userinfo and introspection (docs/oauth.md, "Userinfo and introspection", says why).
 */
export function createOidcProvider(dependencies: OidcProviderDependencies): {
  provider: Provider;
  /** Reads a refresh token ahead of the engine, for the engine's own read in the same request. */
  readRefreshTokenAhead: ReturnType<typeof refreshTokenReadAhead>;
  /** Stops listening for client changes. */
  close(): void;
} {
  const { config, db, clock, cookieKeys, signingKey, logger } = dependencies;
  const engineLifetimes = dependencies.lifetimes ?? lifetimes;

  const configuration: Configuration = {
    adapter: createOidcAdapterFactory(db, clock),
    clients: [],
    jwks: { keys: [signingKey.privateJwk as never] },
    // The interaction cookie on every path of the service: the page switches language (/en/auth →
    // /ru/auth) and the reset-password detour comes back to it. The resume cookie keeps its own path
    // (the engine sets it). Under an issuer with a path, the cookies stay under that path.
    cookies: {
      keys: cookieKeys,
      // Read by the service's own logout too (engine-session-cookie.ts).
      names: { session: engineSessionCookieName },
      short: { path: issuerPath(config.issuer) || '/' },
      long: { path: issuerPath(config.issuer) || '/' },
    },
    routes: oauthRoutes,
    scopes: [...oidcScopes],
    claims: Object.fromEntries(
      Object.entries(claimsByScope).map(([scope, claims]) => [scope, [...claims]]),
    ) as Configuration['claims'],
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    enabledJWA: { idTokenSigningAlgValues: ['RS256'] },
    subjectTypes: ['public'],
    pkce: { required: () => true },
    allowOmittingSingleRegisteredRedirectUri: false,
    extraClientMetadata: {
      properties: [allowedScopesMetadata, firstPartyMetadata, tokensNotBeforeMetadata],
      validator(_ctx, key, value) {
        if (
          key === allowedScopesMetadata &&
          !(Array.isArray(value) && value.every((scope) => typeof scope === 'string'))
        ) {
          throw new TypeError('allowed_scopes must be an array of strings');
        }
        if (key === firstPartyMetadata && typeof value !== 'boolean') {
          throw new TypeError('first_party must be a boolean');
        }
        if (key === tokensNotBeforeMetadata && value !== undefined && typeof value !== 'number') {
          throw new TypeError('tokens_not_before must be a number');
        }
      },
    },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      id_token_signed_response_alg: 'RS256',
      token_endpoint_auth_method: 'client_secret_basic',
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // Served by our own routes, which accept the JWT access tokens this provider issues.
      introspection: { enabled: false },
      userinfo: { enabled: false },
      revocation: {
        enabled: true,
        // Another client's token: answered 200 and left alone (spec: always 200), not an error.
        allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId,
      },
      rpInitiatedLogout: { enabled: true, logoutSource, postLogoutSuccessSource },
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      registration: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => config.apiAudience,
        useGrantedResource: () => true,
        getResourceServerInfo: resourceServerInfo(config.apiAudience),
      },
    },
    discovery: {
      userinfo_endpoint: `${config.issuer}${oauthRoutes.userinfo}`,
      introspection_endpoint: `${config.issuer}${oauthRoutes.introspection}`,
      registration_endpoint: `${config.issuer}${oauthRoutes.registration}`,
      // prompt=create opens registration on /:lang/auth (interaction-policy.ts).
      prompt_values_supported: ['none', 'login', 'consent', 'create'],
    },
    ttl: {
      AuthorizationCode: engineLifetimes.authorizationCode,
      RefreshToken: engineLifetimes.refreshToken,
      Grant: engineLifetimes.refreshToken,
      // A session nobody signed in to (the engine keeps one for the logout page's form, for any GET of
      // /oauth/end_session) lives as long as an interaction: at the 30 days of a sign-in, anyone could
      // add rows for a month at the rate they can send requests, beyond the hourly cleanup's reach.
      Session: (_ctx, session) =>
        session.accountId
          ? engineLifetimes.session
          : Math.min(engineLifetimes.session, engineLifetimes.interaction),
      Interaction: engineLifetimes.interaction,
      IdToken: 15 * 60,
      // Resource servers set these (resource-server.ts); the values here only silence the engine's notice.
      AccessToken: userAccessTokenTtlSeconds,
      ClientCredentials: serviceAccessTokenTtlSeconds,
    },
    // Every user flow of a client allowed refresh_token gets one (no offline_access in the spec).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Refresh tokens live their 30 days independently of the browser session; logout revokes them.
    expiresWithSession: async () => false,
    async findAccount(ctx, sub): Promise<ProviderAccount | undefined> {
      // The refresh_token grant read the account with its refresh token (request-prefetch.ts).
      const prefetched = takeAccount(sub);
      const account = prefetched ? prefetched.found : await loadAccount(db, sub);
      if (!account) return undefined;
      // The id_token's claims only of the scopes the client is still allowed: a refresh token keeps
      // the scopes of its authorization, and a scope an administrator took from the client since
      // must not go on being released by every refresh (as userinfo and the access token don't).
      const client = ctx.oidc.client;
      const allowed = new Set(client ? allowedScopesOf(client as never) : []);
      return {
        accountId: sub,
        account,
        claims: (_use, scope) =>
          claimsForScopes(db, account, new Set(splitScope(scope).filter((item) => allowed.has(item)))),
      };
    },
    async extraTokenClaims(ctx, token) {
      if (token.kind === 'ClientCredentials') return { serviceClient: true };
      if (token.kind !== 'AccessToken' || !('accountId' in token) || !token.accountId) return undefined;
      // When the user authenticated: re-authentication checks (client registration) read it.
      const source = ctx.oidc.entities.AuthorizationCode ?? ctx.oidc.entities.RefreshToken;
      const claims = {
        sessionId: (token as { sessionUid?: string }).sessionUid,
        auth_time: source?.authTime ?? ssoCodeAuthTime(ctx),
        // The token dies with its authorization (code replayed, refresh token reused, consent withdrawn...).
        grant_id: token.grantId,
      };
      // The user's roles and permissions only as far as the grant allows: the roles scope, allowed for
      // the client, asked for and consented to (the token's scope is all three).
      if (!splitScope(token.scope).includes('roles')) return claims;
      const loaded = (ctx.oidc.entities.Account as unknown as ProviderAccount | undefined)?.account;
      const access =
        loaded?.user.id === token.accountId ? loaded.access : await loadUserAccess(db, token.accountId);
      return { ...claims, roles: access.roles, permissions: access.permissions };
    },
    loadExistingGrant: (ctx) => loadGrantFromConsent(ctx, db, config.apiAudience),
    interactions: {
      policy: createInteractionPolicy(),
      url: (ctx, interaction) => interactionUrl(db, ctx, interaction),
    },
    clientBasedCORS(_ctx, origin, client) {
      return client.redirectUris?.some((uri) => URL.parse(uri)?.origin === origin) ?? false;
    },
    async renderError(ctx, out, error) {
      // The database is away: 503 with Retry-After, as every endpoint answers (logged as server_error).
      if (isDatabaseUnavailable(error)) {
        return renderErrorPage(ctx as never, serviceUnavailable(databaseRetryAfterSeconds));
      }
      // An error of the engine carries its status; anything else is a bug of ours (server_error).
      const status =
        (error as { statusCode?: number }).statusCode ?? (out.error === 'server_error' ? 500 : 400);
      if (status >= 500) logger.error({ err: error, path: ctx.path }, 'oidc request failed');
      // In the person's words and language, never the engine's text ("client is invalid").
      const engineError = new ApiError(status, String(out.error), String(out.error_description ?? ''));
      const lang = pageLanguage(ctx as never);
      renderPage(
        ctx as never,
        'error',
        { error: out.error, description: pageErrorText(lang, engineError, {}, false), lang },
        status,
      );
    },
  };

  const provider = new Provider(config.issuer, configuration);
  provider.proxy = config.trustProxy;
  provider.maxIpsCount = config.trustedProxyHops;
  installClientSecretHashing(provider);
  installExactLocalhostRedirects(provider);
  installRegisteredRedirectAtRedemption(provider);
  installIdTokenHintTypeCheck(provider);
  installSsoCodeGrant(provider, { db, clock, apiAudience: config.apiAudience });
  const stopClientCache = installClientCache(provider, {
    db,
    logger,
    clock,
    ...(dependencies.clientCache ?? defaults.clientCache),
  });
  provider.on('server_error', (ctx: KoaContextWithOIDC, error: Error) => {
    if (isDatabaseUnavailable(error)) {
      logger.warn({ err: error, path: ctx.path }, 'database unavailable; answered 503');
    } else {
      logger.error({ err: error, path: ctx.path }, 'oidc server error');
    }
  });
  return { provider, readRefreshTokenAhead: refreshTokenReadAhead(db, clock), close: stopClientCache };
}
