import type Router from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import compose, { type ComposedMiddleware } from 'koa-compose';
import type { SessionAuthentications } from '../http/bearer-auth.js';
import type { Provider } from 'oidc-provider';
import type { Brand } from '../brand.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { ServiceSettings } from '../defaults.js';
import type { RateLimits } from '../http/rate-limit.js';
import type { AuthFlowEngine } from '../identity/auth-flow/flow-engine.js';
import type { Federation } from '../identity/federation/federation-routes.js';
import type { SecurityNotifications } from '../identity/notifications/security-notifications.js';
import type { MainAuthSigning } from '../identity/sessions/main-auth-tokens.js';
import type { ServiceKeys } from '../keys/service-keys.js';
import type { Logger } from '../logger.js';
import type { MainAuthSessionStanding, TokenVerification } from '../tokens/principal.js';
import { clientRegistrationRoutes } from './actions/client-registration.js';
import { consentRoutes } from './actions/consents.js';
import { discoveryRoutes } from './actions/discovery.js';
import { authorizeResumeRoutes } from './actions/authorize-resume.js';
import { endSessionRoutes } from './actions/end-session.js';
import { inboundLoginPageRoutes } from './actions/inbound-login-page.js';
import { interactionRoutes } from './actions/interaction.js';
import { introspectionEndpoint } from './actions/introspect.js';
import { jwksRoutes } from './actions/jwks.js';
import { sendPostAsGet } from './actions/post-as-get.js';
import { ssoInboundRoutes } from './actions/sso-inbound.js';
import { ssoOtcRoutes } from './actions/sso-otc.js';
import { userinfoRoutes } from './actions/userinfo.js';
import { clientRateLimiting } from './client-rate-limits.js';
import { engineAnswerCorrections } from './engine-answer-corrections.js';
import { engineAtTheIssuer } from './engine-origin.js';
import { isEnginePath } from './engine-paths.js';
import { singleLogoutPageRoutes } from './logout-pages.js';
import { ActiveUserCache } from './active-user-cache.js';
import { oauthTokenStanding } from './oauth-token-standing.js';
import { createOidcProvider, oauthRoutes } from './provider.js';
import { RevokedGrants } from './revoked-grants.js';

export interface OidcDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  keys: ServiceKeys;
  cookieKeys: string[];
  lifetimes: ServiceSettings['lifetimes'];
  clientCache: ServiceSettings['clientCache'];
  /** Whether a main-auth token's session is live (src/identity/sessions/live-session-cache.ts). */
  mainAuthSessions: MainAuthSessionStanding;
}

/** What the OAuth routes need of the identity module (sign-in, consent, federation). */
export interface OidcIdentityDeps {
  rateLimits: RateLimits;
  signedIn: Middleware;
  recentAuthentication: Middleware;
  /** When a main-auth token's session last authenticated its user (inbound-SSO codes carry it). */
  sessionAuthentications: SessionAuthentications;
  flows: AuthFlowEngine;
  notifications: SecurityNotifications;
  federation: Federation;
  signing: MainAuthSigning;
  apiPrefix: string;
  brand: Brand;
}

export interface Oidc {
  provider: Provider;
  /** What bearer-token middleware needs to verify our access tokens. */
  tokenVerification: TokenVerification;
  /** The engine's middleware (authorize, token, revocation, discovery...), answers corrected. */
  engine: ComposedMiddleware<ParameterizedContext>;
  /** The methods of the engine's endpoints (its router answers another method as an unknown path). */
  engineMethods: ReadonlyMap<string, readonly string[]>;
  /** Paths only the engine serves: our routers never match them. */
  engineOnlyPaths: ReadonlySet<string>;
  /**
   * Our OAuth endpoints answered by their path alone, every method, without a router: the ones resource
   * servers call for every request they serve (introspection).
   */
  endpoints: ReadonlyMap<string, Middleware>;
  /** Every path the engine answers (for the per-route metrics). */
  enginePaths: string[];
  /** The per-client rate limits of the OAuth endpoints, before anything else of them. */
  clientRateLimiting(rateLimits: RateLimits): Middleware;
  /** Our routes around the engine: jwks, discovery, userinfo, introspection, consents, SSO, interaction. */
  routers(identity: OidcIdentityDeps): Router[];
  close(): void;
}

/**
 * The OAuth/OpenID side (docs/oidc.md): the certified engine configured once, the revoked-grant cache
 * behind token standing, and our own OAuth routes around the engine.
 */
export async function createOidc(deps: OidcDeps): Promise<Oidc> {
  const { config, db, clock, logger, keys } = deps;
  const {
    provider,
    readRefreshTokenAhead,
    close: closeProvider,
  } = createOidcProvider({
    config,
    db,
    clock,
    cookieKeys: deps.cookieKeys,
    signingKey: keys.oidc,
    logger,
    lifetimes: {
      authorizationCode: deps.lifetimes.authorizationCode,
      refreshToken: deps.lifetimes.refreshToken,
      session: deps.lifetimes.oidcSession,
      interaction: deps.lifetimes.interaction,
    },
    clientCache: deps.clientCache,
  });
  const revokedGrants = new RevokedGrants(db, clock, logger);
  await revokedGrants.start();
  const activeUsers = new ActiveUserCache(db, clock);
  const keySet = keys.published;
  const tokenVerification: TokenVerification = {
    keySet,
    issuer: config.issuer,
    audience: config.apiAudience,
    // What an OAuth token is worth now: grant revoked, client or user disabled, client first-party.
    oauthTokens: oauthTokenStanding(provider, revokedGrants, activeUsers),
    mainAuthSessions: deps.mainAuthSessions,
    clock,
  };
  // Only the engine's own spellings of its paths reach it (engine-paths.ts).
  const engineAtItsPaths: Middleware = (ctx, next) => (isEnginePath(ctx.path) ? next() : undefined);
  const engine = compose([
    engineAtItsPaths,
    // The addresses the engine writes are the issuer's, never the request's Host (engine-origin.ts).
    engineAtTheIssuer(config.issuer),
    engineAnswerCorrections(provider),
    ...provider.middleware,
  ]);

  return {
    provider,
    tokenVerification,
    engine,
    engineMethods: new Map([
      [oauthRoutes.authorization, ['GET', 'HEAD', 'POST']],
      [oauthRoutes.token, ['POST']],
      [oauthRoutes.revocation, ['POST']],
    ]),
    engineOnlyPaths: new Set([oauthRoutes.token, oauthRoutes.revocation]),
    endpoints: new Map<string, Middleware>([
      // The engine's, and a POST sent on to it as a GET (actions/post-as-get.ts).
      [oauthRoutes.authorization, (ctx) => (ctx.method === 'POST' ? sendPostAsGet(ctx) : engine(ctx))],
      [
        oauthRoutes.introspection,
        introspectionEndpoint({
          config,
          db,
          clock,
          provider,
          keySet,
          oauthTokens: tokenVerification.oauthTokens,
          mainAuthSessions: deps.mainAuthSessions,
          activeUsers,
        }),
      ],
    ]),
    enginePaths: [...Object.values(oauthRoutes), '/.well-known/openid-configuration'],
    clientRateLimiting: (rateLimits) =>
      clientRateLimiting({
        rateLimits,
        provider,
        logger,
        clock,
        readRefreshTokenAhead,
      }),
    routers: (identity) => [
      jwksRoutes(keySet),
      discoveryRoutes(config.issuer),
      userinfoRoutes({ config, db, clock, keySet, oauthTokens: tokenVerification.oauthTokens, logger }),
      authorizeResumeRoutes(provider),
      endSessionRoutes({ db, clock, keySet, issuer: config.issuer, apiPrefix: identity.apiPrefix }),
      consentRoutes({ db, clock, signedIn: identity.signedIn, logger }),
      ssoOtcRoutes({
        db,
        clock,
        rateLimits: identity.rateLimits,
        signedIn: identity.signedIn,
        sessions: identity.sessionAuthentications,
        logger,
      }),
      ssoInboundRoutes({ db, clock, provider, tokenVerification, logger }),
      inboundLoginPageRoutes(),
      clientRegistrationRoutes({
        db,
        clock,
        tokenVerification,
        recentAuthentication: identity.recentAuthentication,
        logger,
      }),
      singleLogoutPageRoutes(),
      interactionRoutes({
        provider,
        db,
        clock,
        flows: identity.flows,
        rateLimits: identity.rateLimits,
        apiAudience: config.apiAudience,
        notifications: identity.notifications,
        federation: identity.federation,
        logger,
        signing: identity.signing,
        apiPrefix: identity.apiPrefix,
        brand: identity.brand,
      }),
    ],
    close() {
      closeProvider();
      revokedGrants.close();
      activeUsers.close();
    },
  };
}
