import type Router from '@koa/router';
import Koa from 'koa';
import type { Context } from 'koa';
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
import { unhandledRequestErrors } from './http/unhandled-request-errors.js';
import { errorPageAnswer, jsonErrorAnswer, uncaughtErrors } from './http/error-handler.js';
import { jsonNotFound } from './http/json-api.js';
import { isJsonApiPath } from './http/json-api-paths.js';
import { issuerPath } from './http/base-path.js';
import { ownPaths } from './http/own-paths.js';
import { shareRequestStorage } from './http/request-context.js';
import { requestEnvelope } from './http/request-envelope.js';
import { RequestsInFlight } from './http/requests-in-flight.js';
import { routersByPath } from './http/routers-by-path.js';
import { servedUnder } from './http/served-under.js';
import { RateLimits } from './http/rate-limit.js';
import { securityHeaders } from './http/security-headers.js';
import { secureCookies } from './http/secure-cookies.js';
import { identityApiPrefix } from './identity/api/identity-api.js';
import type { AuthFlowEngine } from './identity/auth-flow/flow-engine.js';
import type { StepRegistry } from './identity/auth-flow/step-registry.js';
import type { AuthMethodRegistry } from './identity/auth-methods/auth-method-plugin.js';
import type { OAuthProviderConfig } from './identity/federation/oauth-provider-config.js';
import type { OAuthProviderRegistry } from './identity/federation/oauth-provider-registry.js';
import { createIdentity } from './identity/identity.js';
import { LiveSessionCache } from './identity/sessions/live-session-cache.js';
import type { DevelopmentTransport } from './identity/transports/development-transport.js';
import type { Transport } from './identity/transports/transport.js';
import type { TransportRegistry } from './identity/transports/transport-registry.js';
import { cleanupTasks, scheduleCleanup } from './jobs/cleanup-expired-records.js';
import { resolveSecrets, type Secrets } from './keys/development-secrets.js';
import type { PublishedKeySet } from './keys/published-key-set.js';
import { activateServiceKeys } from './keys/service-keys.js';
import type { SigningKey } from './keys/signing-keys.js';
import { brandFrom } from './brand.js';
import { brandStylesheetRoutes } from './http/brand-stylesheet.js';
import { createLogger, type Logger } from './logger.js';
import { engineRequestStorage } from './oidc/engine-requests.js';
import { createOidc } from './oidc/oidc.js';
import { oauthRoutes } from './oidc/provider.js';
import { oauthErrorAnswer } from './oidc/oauth-error.js';
import { createManagement, type Management } from './management/management.js';
import { createAdmin } from './admin/admin.js';
import { platformEvents, platformProducer, type PlatformEvents } from './platform/events/platform-events.js';
import { createPlatform, type Platform } from './platform/platform.js';
import { createOperations } from './operations/operations.js';
import type { ServiceMetrics } from './operations/service-metrics.js';
import type { TokenVerification } from './tokens/principal.js';

/** Where errors are RFC 6749 JSON: the OAuth endpoints called by programs. */
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
      schema: config.databaseSchema,
      poolMax: config.databasePoolMax,
      timeoutMs: config.databaseTimeoutMs,
      logger,
      // No data directory configured: an in-memory database, nothing written to disk.
      pgliteDataDir: config.dataDir === undefined ? undefined : `${config.dataDir}/pgdata`,
    }));
  const ownsDatabase = options.database === undefined;
  const { db } = database;

  const secrets = options.secrets ?? (await resolveSecrets(config, logger));
  const keys = await activateServiceKeys({ db, clock }, secrets);
  const liveSessions = new LiveSessionCache(db, clock, settings.sessions);
  const oidc = await createOidc({
    config,
    db,
    clock,
    logger,
    keys,
    cookieKeys: secrets.cookieKeys,
    lifetimes: settings.lifetimes,
    clientCache: settings.clientCache,
    mainAuthSessions: liveSessions,
  });
  const { provider, tokenVerification } = oidc;
  const rateLimits = new RateLimits(db, settings.rateLimits);
  const identity = await createIdentity({
    config,
    db,
    clock,
    logger,
    settings,
    rateLimits,
    provider,
    tokenVerification,
    mainAuthKey: keys.mainAuth,
    cookieKeys: secrets.cookieKeys,
    ...(options.transports ? { transports: options.transports } : {}),
    ...(options.oauthProviders ? { oauthProviders: options.oauthProviders } : {}),
  });

  const events = await startEventRuntime({
    db,
    databaseKind: database.kind,
    bus: options.eventBus ?? (await createEventBus(config, logger)),
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
    enginePaths: oidc.enginePaths,
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
    recentAuthentication: identity.recentAuthentication,
    steps: identity.steps,
    authMethods: identity.authMethods,
  });

  const app = new Koa();
  app.keys = secrets.cookieKeys;
  app.proxy = config.trustProxy;
  // The client is the address the outermost trusted proxy appended, not the leftmost one (request-info.ts).
  app.maxIpsCount = config.trustedProxyHops;
  app.silent = true;
  app.on('error', unhandledRequestErrors(logger, clock));

  // Requests run in the engine's AsyncLocalStorage, our request context with them (request-context.ts).
  shareRequestStorage(engineRequestStorage);
  // The service's own stack, from its root; served under the issuer's path (served-under.ts).
  const own = new Koa();
  // An error no router answered: in its endpoint's shape (503 + Retry-After when the database is away).
  const errorAnswers = {
    api: jsonErrorAnswer(logger),
    oauth: oauthErrorAnswer(logger),
    page: errorPageAnswer(logger),
  };
  const errorAnswerFor = (ctx: Context) =>
    isJsonApiPath(ctx.path)
      ? errorAnswers.api
      : oauthJsonPaths.has(ctx.path)
        ? errorAnswers.oauth
        : errorAnswers.page;
  // Every page shows the product's brand, the engine's error and logout pages too (src/http/pages.ts).
  const brand = config.brand ?? brandFrom({});
  // Request id, settings, security headers, brand, the last error boundary and metrics, around every
  // request: they see every answer, errors included.
  own.use(
    requestEnvelope({
      observers: operations.metrics.observers,
      settings,
      brand,
      securityHeaders: securityHeaders({ https: new URL(config.issuer).protocol === 'https:' }),
      answerUncaught: uncaughtErrors(errorAnswerFor),
      recordAnswer: operations.recordAnswer,
      methodsByPath: oidc.engineMethods,
      inFlight: new RequestsInFlight(settings.requestsInFlight, logger, clock),
    }),
  );
  // An https issuer's cookies are Secure even when TLS ended in front (secure-cookies.ts).
  if (new URL(config.issuer).protocol === 'https:') own.use(secureCookies);
  // Before anything else of the OAuth endpoints (our own introspection included).
  own.use(oidc.clientRateLimiting(rateLimits));
  // The engine last: everything our routes do not answer (authorize, token, revocation, discovery...).
  const { engine } = oidc;
  // Paths only the engine serves, and our endpoints answered by path alone, skip the routers.
  own.use((ctx, next) => {
    if (oidc.engineOnlyPaths.has(ctx.path)) return engine(ctx);
    const endpoint = oidc.endpoints.get(ctx.path);
    return endpoint ? endpoint(ctx, next) : next();
  });
  const routers: Router[] = [
    // /healthz, /readyz, /metrics: not the OAuth endpoints, so never rate-limited, never the engine's.
    operations.router,
    assetRoutes(),
    brandStylesheetRoutes(brand),
    ...oidc.routers({ ...identity, rateLimits, apiPrefix: identityApiPrefix, brand }),
    ...identity.routers,
    platform.router,
    management.router,
    management.pages,
    admin.router,
    admin.pages,
  ];
  // Each request visits only the routers with a route that could match its path (routers-by-path.ts).
  own.use(routersByPath(routers));
  // Embedded, the service answers only these; the host answers the rest (own-paths.ts).
  const ownsPath = ownPaths(routers, {
    prefixes: ['/oauth/', '/interaction/'],
    paths: ['/.well-known/openid-configuration'],
  });
  // Standalone, last of our JSON APIs: an unknown path under /api/v2 is a JSON 404, not the engine's.
  const apiNotFound = jsonNotFound('/api/v2', logger);
  own.use(apiNotFound.routes());
  own.use(engine);
  const ownStack = compose(own.middleware);
  const prefix = issuerPath(config.issuer);
  // Standalone it answers every path under the issuer's; in a host, only its own (the host has the rest).
  app.use(prefix ? servedUnder(prefix, ownStack, () => true) : ownStack);
  // In a host app `ctx.ip` follows the host's proxy setting; the service counts callers by its own.
  const middleware = servedUnder(prefix, withOwnClientAddress(app, ownStack), ownsPath);

  const cleanup = options.backgroundJobs
    ? scheduleCleanup(db, clock, logger, [
        ...cleanupTasks,
        ...identity.cleanupTasks,
        ...management.retentionTasks,
      ])
    : undefined;

  return {
    app,
    middleware,
    provider,
    db,
    keys,
    flows: identity.flows,
    steps: identity.steps,
    authMethods: identity.authMethods,
    oauthProviders: identity.oauthProviders,
    rateLimits,
    transports: identity.transports,
    developmentMessages: identity.developmentMessages,
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
      oidc.close();
      liveSessions.close();
      // The consumers, the relay and the NATS connection first: they use the database.
      platform.close();
      await management.close();
      await events.close();
      await identity.close();
      await rateLimits.close();
      if (ownsDatabase) await database.close();
    },
  };
}

/**
 * Runs `stack` with `ctx.ip` as `app` (TRUST_PROXY, its hops) sees it, not as the host app does: a host
 * that trusts every X-Forwarded-For entry (`proxy = true`) would let a caller pick a new address per
 * request and escape every per-address rate limit and lockout. The host's own view is restored after.
 */
function withOwnClientAddress(
  app: Koa,
  stack: (ctx: Context, next?: Koa.Next) => Promise<unknown>,
): (ctx: Context) => Promise<unknown> {
  return async (ctx) => {
    const view = Object.create(app.request) as Koa.Request;
    Object.assign(view, { app, req: ctx.req });
    const hostIp = ctx.request.ip;
    ctx.request.ip = view.ip;
    try {
      return await stack(ctx);
    } finally {
      ctx.request.ip = hostIp;
    }
  };
}
