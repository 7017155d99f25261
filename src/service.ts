import type Router from '@koa/router';
import Koa from 'koa';
import compose from 'koa-compose';
import type { Provider } from 'oidc-provider';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { resolveSettings, type ServiceSettings, type SettingsOverrides } from './defaults.js';
import { openDatabase, type Database, type DatabaseHandle } from './db/database.js';
import { createEventBus } from './events/create-event-bus.js';
import type { EventBus } from './events/event-bus.js';
import { startEventRuntime, type EventRuntime } from './events/event-runtime.js';
import { assetRoutes } from './http/assets.js';
import { requireRecentAuthentication } from './http/bearer-auth.js';
import { errorPageAnswer, jsonErrorAnswer, uncaughtErrors } from './http/error-handler.js';
import { jsonNotFound } from './http/json-api.js';
import { ownPaths } from './http/own-paths.js';
import { RateLimits } from './http/rate-limit.js';
import { securityHeaders } from './http/security-headers.js';
import { authFlowRoutes } from './identity/api/auth-flow-routes.js';
import { authMethodRoutes } from './identity/api/auth-method-routes.js';
import { authSessionRoutes } from './identity/api/auth-session-routes.js';
import { createIdentityApi, identityApiPrefix } from './identity/api/identity-api.js';
import { savedAccountRoutes } from './identity/api/saved-account-routes.js';
import { securitySessionRoutes } from './identity/api/security-session-routes.js';
import { AuthFlowEngine } from './identity/auth-flow/flow-engine.js';
import { Federation } from './identity/federation/federation-routes.js';
import { LinkedProviders } from './identity/federation/linked-providers.js';
import { linkedProviderRoutes } from './identity/api/linked-provider-routes.js';
import { firstPasswordRoutes } from './identity/api/first-password-routes.js';
import type { OAuthProviderConfig } from './identity/federation/oauth-provider-config.js';
import { OAuthProviderRegistry } from './identity/federation/oauth-provider-registry.js';
import { StepRegistry } from './identity/auth-flow/step-registry.js';
import { consentStep } from './identity/auth-flow/steps/consent.js';
import { createMfaSetupStep } from './identity/auth-flow/steps/mfa-setup.js';
import { passwordStep } from './identity/auth-flow/steps/password.js';
import { phoneEmailStep } from './identity/auth-flow/steps/phone-email.js';
import { createTotpStep } from './identity/auth-flow/steps/totp.js';
import { StoredFunnels } from './identity/auth-flow/stored-funnels.js';
import { UserFunnelPlanner } from './identity/auth-flow/user-funnel.js';
import type { AuthMethodRegistry } from './identity/auth-methods/auth-method-plugin.js';
import { builtInAuthMethods } from './identity/auth-methods/built-in-methods.js';
import { AuthMethodManager } from './identity/auth-methods/manage-auth-methods.js';
import { SecretBox } from './identity/auth-methods/secret-box.js';
import type { MainAuthSigning } from './identity/sessions/main-auth-tokens.js';
import { reauthenticationRoutes } from './identity/api/reauthentication-routes.js';
import { sessionAuthentications } from './identity/reauthentication/session-authentications.js';
import { requireSignedIn } from './identity/sessions/require-signed-in.js';
import type { SessionPolicy } from './identity/sessions/session-policy.js';
import { developmentMessagesRoutes } from './identity/api/development-messages-routes.js';
import { passwordRoutes } from './identity/api/password-routes.js';
import { verificationRoutes } from './identity/api/verification-routes.js';
import { createOtpCodeStep } from './identity/auth-flow/steps/otp-code.js';
import { createRegistrationCodeStep } from './identity/auth-flow/steps/otp-code-registration.js';
import { passwordRegistrationStep } from './identity/auth-flow/steps/password-registration.js';
import { profileStep } from './identity/auth-flow/steps/profile.js';
import { accountSelectionStep } from './identity/auth-flow/steps/account-selection.js';
import { createQrStep } from './identity/auth-flow/steps/qr.js';
import { createOAuthStep } from './identity/auth-flow/steps/oauth.js';
import { qrLoginRoutes } from './identity/api/qr-login-routes.js';
import { qrApprovePageRoutes } from './identity/pages/qr-approve-page.js';
import { phoneEmailRegistrationStep } from './identity/auth-flow/steps/phone-email-registration.js';
import { createAccountFinisher } from './identity/registration/create-account.js';
import { resetPasswordPageRoutes } from './identity/pages/reset-password-page.js';
import type { PasswordDeps } from './identity/passwords/password-deps.js';
import { cleanUpExpiredSessions } from './identity/sessions/session-cleanup.js';
import { recordAuthentication, revokeUserSessions } from './identity/sessions/sessions.js';
import { prepareDecoyHash } from './identity/passwords/password-hash.js';
import { configuredTransports } from './identity/transports/configured-transports.js';
import type { DevelopmentTransport } from './identity/transports/development-transport.js';
import type { Transport } from './identity/transports/transport.js';
import type { TransportRegistry } from './identity/transports/transport-registry.js';
import { cleanUpSecurityRecords } from './identity/verification/security-records-cleanup.js';
import { cleanupTasks, scheduleCleanup } from './jobs/cleanup-expired-records.js';
import { resolveSecrets, type Secrets } from './keys/development-secrets.js';
import { PublishedKeySet } from './keys/published-key-set.js';
import { activateSigningKeys, signingKeyFromPem, type SigningKey } from './keys/signing-keys.js';
import { Messages } from './i18n/messages.js';
import { brandFrom } from './brand.js';
import { brandStylesheetRoutes } from './http/brand-stylesheet.js';
import { SecurityNotifications } from './identity/notifications/security-notifications.js';
import { createLogger, type Logger } from './logger.js';
import { clientRegistrationRoutes } from './oidc/actions/client-registration.js';
import { consentRoutes } from './oidc/actions/consents.js';
import { ssoOtcRoutes } from './oidc/actions/sso-otc.js';
import { ssoInboundRoutes } from './oidc/actions/sso-inbound.js';
import { inboundLoginPageRoutes } from './oidc/actions/inbound-login-page.js';
import { inboundLoginRoutes } from './identity/api/inbound-login-routes.js';
import { discoveryRoutes } from './oidc/actions/discovery.js';
import { endSessionRoutes } from './oidc/actions/end-session.js';
import { interactionRoutes } from './oidc/actions/interaction.js';
import { introspectionRoutes } from './oidc/actions/introspect.js';
import { jwksRoutes } from './oidc/actions/jwks.js';
import { userinfoRoutes } from './oidc/actions/userinfo.js';
import { singleLogoutPageRoutes } from './oidc/logout-pages.js';
import { createOidcProvider, oauthRoutes } from './oidc/provider.js';
import { clientRateLimiting } from './oidc/client-rate-limits.js';
import { oauthTokenStanding } from './oidc/oauth-token-standing.js';
import { RevokedGrants } from './oidc/revoked-grants.js';
import { engineAnswerCorrections } from './oidc/engine-answer-corrections.js';
import { oauthErrorAnswer } from './oidc/oauth-error.js';
import { createManagement, type Management } from './management/management.js';
import { createAdmin } from './admin/admin.js';
import { platformEvents, platformProducer, type PlatformEvents } from './platform/events/platform-events.js';
import { createPlatform, type Platform } from './platform/platform.js';
import { createOperations } from './operations/operations.js';
import type { ServiceMetrics } from './operations/service-metrics.js';
import type { TokenVerification } from './tokens/principal.js';

const engineOnlyPaths = new Set<string>([
  oauthRoutes.authorization,
  oauthRoutes.token,
  oauthRoutes.revocation,
]);

/** Where errors are JSON: our APIs ({ error, message }) and the OAuth endpoints called by programs. */
const jsonApiPrefixes = ['/api/', '/oauth/clients/', '/oauth/consents/', '/oauth/sso/'];
const oauthJsonPaths = new Set<string>([
  oauthRoutes.token,
  oauthRoutes.introspection,
  oauthRoutes.revocation,
  oauthRoutes.userinfo,
  oauthRoutes.jwks,
  '/.well-known/openid-configuration',
]);

export interface IdentityServiceOptions {
  config: Config;
  /** An open database; when absent one is opened from the config (and closed by `close`). */
  database?: DatabaseHandle;
  logger?: Logger;
  clock?: Clock;
  /** Secrets to use instead of the configured / development ones. */
  secrets?: Secrets;
  /** Run the hourly cleanup of expired records in this process (main does; a library user may not). */
  backgroundJobs?: boolean;
  /** Transport plugins (email, SMS, messenger...); each becomes the default for its channels. */
  transports?: Transport[];
  /** The bus platform events go to, instead of the configured one (EVENT_BUS). */
  eventBus?: EventBus;
  /** Publish the event outbox from this process (default true; one worker of a cluster does). */
  relayEvents?: boolean;
  /** Third-party identity providers (oauth_provider plugins), instead of FEDERATION_PROVIDERS. */
  oauthProviders?: OAuthProviderConfig[];
  /** Instead of the defaults (src/defaults.ts): lifetimes, session rules, rate-limit rules. */
  settings?: SettingsOverrides;
}

export interface IdentityService {
  /** The service as a Koa app of its own: listen with `app.callback()` (it answers every path). */
  app: Koa;
  /**
   * The service inside a host Koa app (`host.use(service.middleware)`): it answers its own paths and
   * calls `next()` for every other one, so the host's routes keep working (docs/library.md).
   */
  middleware: Koa.Middleware;
  provider: Provider;
  db: Database;
  keys: { oidc: SigningKey; mainAuth: SigningKey; published: PublishedKeySet };
  flows: AuthFlowEngine;
  /** The auth-flow steps by id; plugins register theirs here. */
  steps: StepRegistry;
  /** The kinds of sign-in method (auth_method plugins). */
  authMethods: AuthMethodRegistry;
  /** The third-party identity providers (oauth_provider plugins). */
  oauthProviders: OAuthProviderRegistry;
  rateLimits: RateLimits;
  /** Routes every outgoing message (codes, links) to the transport that can deliver it. */
  transports: TransportRegistry;
  /** The development outbox: messages "sent" by the development transport (`latestTo(recipient)`). */
  developmentMessages: DevelopmentTransport;
  /** What bearer-token middleware needs to verify our access tokens. */
  tokenVerification: TokenVerification;
  logger: Logger;
  clock: Clock;
  config: Config;
  /** The defaults (src/defaults.ts) with the overrides this service was given. */
  settings: ServiceSettings;
  /** Platform events: the outbox, its relay and the bus (embedded or NATS JetStream). */
  events: EventRuntime<PlatformEvents>;
  /** Platform reference data, feature flags, translation packages (/api/v2/platform). */
  platform: Platform;
  /** crm's events and snapshots, the dashboards (/api/v2/management, /:lang/management/dashboards). */
  management: Management;
  /** The Prometheus metrics of this service (GET /metrics; docs/operations.md). */
  metrics: ServiceMetrics;
  /** Stops background work and closes the database if this service opened it. */
  close(): Promise<void>;
}

/**
 * Builds the identity service as a Koa app. Expects a migrated database (`migrateToLatest`); `main`
 * and the CLI migrate before calling this.
 */
export async function createIdentityService(options: IdentityServiceOptions): Promise<IdentityService> {
  const { config } = options;
  // The environment's session rules (npm start), then what the caller passed.
  const settings = resolveSettings({
    ...options.settings,
    sessions: { ...config.sessions, ...options.settings?.sessions },
  });
  const logger = options.logger ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const database =
    options.database ??
    (await openDatabase({
      databaseUrl: config.databaseUrl,
      poolMax: config.databasePoolMax,
      timeoutMs: config.databaseTimeoutMs,
      logger,
      pgliteDataDir: `${config.dataDir}/pgdata`,
    }));
  const ownsDatabase = options.database === undefined;
  const { db } = database;

  const secrets = options.secrets ?? (await resolveSecrets(config, logger));
  const oidcKey = await signingKeyFromPem(secrets.oidcPrivateKey, 'oidc');
  const mainAuthKey = await signingKeyFromPem(secrets.mainAuthPrivateKey, 'main-auth');
  if (oidcKey.kid === mainAuthKey.kid) {
    throw new Error('MAIN_AUTH_PRIVATE_KEY must be a different key from OIDC_PRIVATE_KEY');
  }
  await db.transaction((trx) => activateSigningKeys(trx, [oidcKey, mainAuthKey], clock.now()));
  const keySet = new PublishedKeySet(db, clock);
  await keySet.refresh();

  const { provider, close: closeProvider } = createOidcProvider({
    config,
    db,
    clock,
    cookieKeys: secrets.cookieKeys,
    signingKey: oidcKey,
    logger,
    lifetimes: {
      authorizationCode: settings.lifetimes.authorizationCode,
      refreshToken: settings.lifetimes.refreshToken,
      session: settings.lifetimes.oidcSession,
      interaction: settings.lifetimes.interaction,
    },
  });
  const revokedGrants = new RevokedGrants(db, clock, logger);
  await revokedGrants.start();
  const tokenVerification: TokenVerification = {
    keySet,
    issuer: config.issuer,
    audience: config.apiAudience,
    // What an OAuth token is worth now: grant revoked, client disabled or first-party (all in memory).
    oauthTokens: oauthTokenStanding(provider, revokedGrants),
  };
  const rateLimits = new RateLimits(db, settings.rateLimits);
  const sessionPolicy: SessionPolicy = { ...settings.sessions };
  // Every route acting on the signed-in user's account; and the sensitive ones (re-authentication).
  const signedIn = requireSignedIn({ db, clock, tokenVerification, sessionPolicy });
  const recentAuthentication = requireRecentAuthentication({
    maxAgeSeconds: sessionPolicy.reauthenticationMaxAgeSeconds,
    now: () => clock.now(),
    sessions: sessionAuthentications({ db, clock, sessionPolicy, apiPrefix: identityApiPrefix }),
  });

  const { registry: transports, developmentMessages } = configuredTransports(
    config,
    logger,
    options.transports,
  );
  const messaging = { db, clock, transports, rateLimits, logger };
  const notifications = new SecurityNotifications({ transports, messages: Messages.load(), logger });
  const passwordDeps: PasswordDeps = {
    ...messaging,
    issuer: config.issuer,
    revokeOtherSessions: (trx, userId, exceptSessionId) =>
      revokeUserSessions(
        trx,
        userId,
        { ...(exceptSessionId ? { exceptSessionId } : {}), reason: 'password_changed' },
        clock.now(),
      ),
    recordSessionAuthentication: (trx, sessionId) =>
      recordAuthentication(trx, sessionId, sessionPolicy, clock.now()),
    notifications,
  };

  const totp = { box: new SecretBox(secrets.cookieKeys), issuerName: new URL(config.issuer).host };
  const authMethods = builtInAuthMethods(totp);
  const oauthProviders = new OAuthProviderRegistry();
  for (const provider of options.oauthProviders ?? config.oauthProviders) oauthProviders.register(provider);
  const steps = new StepRegistry()
    .register(phoneEmailStep)
    .register(passwordStep)
    .register(createOtpCodeStep(messaging))
    .register(consentStep)
    .register(createTotpStep(totp))
    .register(createMfaSetupStep(authMethods))
    .register(phoneEmailRegistrationStep)
    .register(createRegistrationCodeStep({ transports, rateLimits, logger }))
    .register(passwordRegistrationStep)
    .register(profileStep)
    .register(accountSelectionStep)
    .register(createQrStep({ issuer: config.issuer }))
    .register(createOAuthStep({ issuer: config.issuer, providers: oauthProviders }));
  const flows = new AuthFlowEngine(db, clock, steps, new StoredFunnels(db), {
    planner: new UserFunnelPlanner(authMethods),
    finishers: { registration: createAccountFinisher(authMethods) },
  });
  const signing: MainAuthSigning = { key: mainAuthKey, issuer: config.issuer, audience: config.apiAudience };
  const federation = new Federation({
    provider,
    db,
    clock,
    registry: oauthProviders,
    messages: Messages.load(),
    notifications,
    logger,
    issuer: config.issuer,
    signing,
    apiPrefix: identityApiPrefix,
    brand: config.brand ?? brandFrom({}),
  });
  await prepareDecoyHash();

  const events = await startEventRuntime({
    db,
    databaseKind: database.kind,
    bus: options.eventBus ?? createEventBus(config, logger),
    catalog: platformEvents,
    producer: platformProducer,
    logger,
    clock,
    relayEvents: options.relayEvents ?? true,
  });
  const operations = createOperations({
    db,
    clock,
    bus: events.bus,
    metricsToken: config.metricsToken,
    enginePaths: [...Object.values(oauthRoutes), '/.well-known/openid-configuration'],
  });
  operations.observeEngine(provider);
  const platform = createPlatform({ config, db, clock, logger, events, tokenVerification });
  const management = createManagement({
    config,
    db,
    clock,
    logger,
    bus: events.bus,
    tokenVerification,
    metricsRegistry: operations.metrics.registry,
  });

  const admin = createAdmin({
    config,
    db,
    clock,
    logger,
    tokenVerification,
    recentAuthentication,
    steps,
    authMethods,
  });

  const app = new Koa();
  app.keys = secrets.cookieKeys;
  app.proxy = config.trustProxy;
  // The client is the address the outermost trusted proxy appended, not the leftmost one (request-info.ts).
  app.maxIpsCount = config.trustedProxyHops;
  app.silent = true;
  app.on('error', (error) => logger.error({ err: error }, 'unhandled request error'));

  // Request ids and metrics first: they see every answer, errors included.
  for (const middleware of operations.middleware) app.use(middleware);
  app.use(securityHeaders({ https: new URL(config.issuer).protocol === 'https:' }));
  // An error no router answered: in its endpoint's shape (503 + Retry-After when the database is away).
  const errorAnswers = {
    api: jsonErrorAnswer(logger),
    oauth: oauthErrorAnswer(logger),
    page: errorPageAnswer(logger),
  };
  app.use(
    uncaughtErrors((ctx) =>
      jsonApiPrefixes.some((prefix) => ctx.path.startsWith(prefix))
        ? errorAnswers.api
        : oauthJsonPaths.has(ctx.path)
          ? errorAnswers.oauth
          : errorAnswers.page,
    ),
  );
  // /healthz, /readyz, /metrics: never rate-limited, never the engine's.
  app.use(operations.router.routes());
  // Before anything else of the OAuth endpoints (our own introspection included).
  app.use(clientRateLimiting({ rateLimits, provider, logger, clock }));
  // The engine last: everything our routes do not answer (authorize, token, revocation, discovery...).
  const engine = compose([engineAnswerCorrections(provider), ...provider.middleware]);
  // Paths only the engine serves skip our routers (none of them matches these).
  app.use((ctx, next) => (engineOnlyPaths.has(ctx.path) ? engine(ctx) : next()));
  const routers: Router[] = [
    assetRoutes(),
    brandStylesheetRoutes(config.brand ?? brandFrom({})),
    jwksRoutes(keySet),
    discoveryRoutes(),
    userinfoRoutes({ config, db, keySet, oauthTokens: tokenVerification.oauthTokens, logger }),
    introspectionRoutes({
      config,
      db,
      clock,
      provider,
      keySet,
      oauthTokens: tokenVerification.oauthTokens,
      logger,
    }),
    endSessionRoutes({ db, clock, keySet, issuer: config.issuer }),
    consentRoutes({ db, clock, signedIn, logger }),
    ssoOtcRoutes({ db, clock, rateLimits, signedIn, logger }),
    ssoInboundRoutes({ db, clock, provider, tokenVerification, logger }),
    inboundLoginPageRoutes(),
    qrApprovePageRoutes(),
    clientRegistrationRoutes({ db, clock, tokenVerification, recentAuthentication, logger }),
    singleLogoutPageRoutes(),
    federation.routes(),
    interactionRoutes({
      provider,
      db,
      clock,
      flows,
      rateLimits,
      apiAudience: config.apiAudience,
      notifications,
      federation,
      logger,
      signing,
      apiPrefix: identityApiPrefix,
      brand: config.brand ?? brandFrom({}),
    }),
    createIdentityApi(
      { config, logger, guards: { bearer: signedIn, reauthentication: recentAuthentication } },
      [
        authFlowRoutes({
          db,
          clock,
          flows,
          rateLimits,
          signing,
          notifications,
          apiPrefix: identityApiPrefix,
        }),
        authSessionRoutes({
          db,
          clock,
          rateLimits,
          signing,
          sessionPolicy,
          apiPrefix: identityApiPrefix,
        }),
        securitySessionRoutes({ db, clock, sessionPolicy }),
        reauthenticationRoutes({ ...messaging, totp, sessionPolicy }),
        authMethodRoutes({ clock, manager: new AuthMethodManager(db, authMethods, notifications) }),
        savedAccountRoutes({ db, clock }),
        linkedProviderRoutes({
          clock,
          linkedProviders: new LinkedProviders(db, oauthProviders),
          federation,
        }),
        firstPasswordRoutes({ db, clock, notifications }),
        inboundLoginRoutes({ db, clock, rateLimits, signing, apiPrefix: identityApiPrefix }),
        qrLoginRoutes({ db, clock, rateLimits }),
        passwordRoutes(passwordDeps),
        verificationRoutes({ ...messaging, notifications }),
        ...(config.env === 'production'
          ? []
          : [developmentMessagesRoutes(developmentMessages, { allowRemote: config.devMessagesRemote })]),
      ],
    ),
    resetPasswordPageRoutes(passwordDeps),
    platform.router,
    management.router,
    management.pages,
    admin.router,
    admin.pages,
  ];
  for (const router of routers) app.use(router.routes()).use(router.allowedMethods());
  // Embedded, the service answers only these; the host answers the rest (own-paths.ts).
  const ownsPath = ownPaths([operations.router, ...routers], {
    prefixes: ['/oauth/', '/interaction/'],
    paths: ['/.well-known/openid-configuration'],
  });
  // Standalone, last of our JSON APIs: an unknown path under /api/v2 is a JSON 404, not the engine's.
  const apiNotFound = jsonNotFound('/api/v2', logger);
  app.use(apiNotFound.routes());
  app.use(engine);
  const ownStack = compose(app.middleware);
  const middleware: Koa.Middleware = (ctx, next) => (ownsPath(ctx.path) ? ownStack(ctx) : next());

  const cleanup = options.backgroundJobs
    ? scheduleCleanup(db, clock, logger, [
        ...cleanupTasks,
        { name: 'security records', run: cleanUpSecurityRecords },
        { name: 'main-auth sessions', run: cleanUpExpiredSessions },
        ...management.retentionTasks,
      ])
    : undefined;

  return {
    app,
    middleware,
    provider,
    db,
    keys: { oidc: oidcKey, mainAuth: mainAuthKey, published: keySet },
    flows,
    steps,
    authMethods,
    oauthProviders,
    rateLimits,
    transports,
    developmentMessages,
    tokenVerification,
    logger,
    clock,
    config,
    settings,
    events,
    platform,
    management,
    metrics: operations.metrics,
    async close() {
      cleanup?.stop();
      closeProvider();
      revokedGrants.close();
      // The consumers, the relay and the NATS connection first: they use the database.
      platform.close();
      await management.close();
      await events.close();
      await transports.close();
      await rateLimits.close();
      if (ownsDatabase) await database.close();
    },
  };
}
