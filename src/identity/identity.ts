import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Provider } from 'oidc-provider';
import type { Clock } from '../clock.js';
import { brandFrom } from '../brand.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { ServiceSettings } from '../defaults.js';
import { requireRecentAuthentication, type SessionAuthentications } from '../http/bearer-auth.js';
import type { RateLimits } from '../http/rate-limit.js';
import { Messages } from '../i18n/messages.js';
import type { CleanupTask } from '../jobs/cleanup-expired-records.js';
import type { SigningKey } from '../keys/signing-keys.js';
import type { Logger } from '../logger.js';
import type { TokenVerification } from '../tokens/principal.js';
import { authFlowRoutes } from './api/auth-flow-routes.js';
import { authMethodRoutes } from './api/auth-method-routes.js';
import { authSessionRoutes } from './api/auth-session-routes.js';
import { developmentMessagesRoutes } from './api/development-messages-routes.js';
import { firstPasswordRoutes } from './api/first-password-routes.js';
import { createIdentityApi, identityApiPrefix } from './api/identity-api.js';
import { inboundLoginRoutes } from './api/inbound-login-routes.js';
import { linkedProviderRoutes } from './api/linked-provider-routes.js';
import { passwordRoutes } from './api/password-routes.js';
import { qrLoginRoutes } from './api/qr-login-routes.js';
import { reauthenticationRoutes } from './api/reauthentication-routes.js';
import { savedAccountRoutes } from './api/saved-account-routes.js';
import { securitySessionRoutes } from './api/security-session-routes.js';
import { verificationRoutes } from './api/verification-routes.js';
import { AuthFlowEngine } from './auth-flow/flow-engine.js';
import { StepRegistry } from './auth-flow/step-registry.js';
import { accountSelectionStep } from './auth-flow/steps/account-selection.js';
import { consentStep } from './auth-flow/steps/consent.js';
import { createMfaSetupStep } from './auth-flow/steps/mfa-setup.js';
import { createRegistrationCodeStep } from './auth-flow/steps/otp-code-registration.js';
import { createOtpCodeStep } from './auth-flow/steps/otp-code.js';
import { passwordRegistrationStep } from './auth-flow/steps/password-registration.js';
import { passwordStep } from './auth-flow/steps/password.js';
import { phoneEmailRegistrationStep } from './auth-flow/steps/phone-email-registration.js';
import { phoneEmailStep } from './auth-flow/steps/phone-email.js';
import { profileStep } from './auth-flow/steps/profile.js';
import { createQrStep } from './auth-flow/steps/qr.js';
import { createOAuthStep } from './auth-flow/steps/oauth.js';
import { createTotpStep } from './auth-flow/steps/totp.js';
import { StoredFunnels } from './auth-flow/stored-funnels.js';
import { UserFunnelPlanner } from './auth-flow/user-funnel.js';
import type { AuthMethodRegistry } from './auth-methods/auth-method-plugin.js';
import { builtInAuthMethods } from './auth-methods/built-in-methods.js';
import { AuthMethodManager } from './auth-methods/manage-auth-methods.js';
import { SecretBox } from './auth-methods/secret-box.js';
import { Federation } from './federation/federation-routes.js';
import { LinkedProviders } from './federation/linked-providers.js';
import type { OAuthProviderConfig } from './federation/oauth-provider-config.js';
import { OAuthProviderRegistry } from './federation/oauth-provider-registry.js';
import { SecurityNotifications } from './notifications/security-notifications.js';
import { avatarRoutes } from './pages/avatar-route.js';
import { onboardingPageRoutes } from './pages/onboarding-page.js';
import { qrApprovePageRoutes } from './pages/qr-approve-page.js';
import { resetPasswordPageRoutes } from './pages/reset-password-page.js';
import type { PasswordDeps } from './passwords/password-deps.js';
import { prepareDecoyHash } from './passwords/password-hash.js';
import { sessionAuthentications } from './reauthentication/session-authentications.js';
import { createAccountFinisher } from './registration/create-account.js';
import type { MainAuthSigning } from './sessions/main-auth-tokens.js';
import { requireSignedIn } from './sessions/require-signed-in.js';
import { sessionCleanupTasks } from './sessions/session-cleanup.js';
import type { SessionPolicy } from './sessions/session-policy.js';
import { recordAuthentication, revokeUserSessions } from './sessions/sessions.js';
import { configuredTransports } from './transports/configured-transports.js';
import type { DevelopmentTransport } from './transports/development-transport.js';
import type { Transport } from './transports/transport.js';
import type { TransportRegistry } from './transports/transport-registry.js';
import { securityRecordsCleanupTasks } from './verification/security-records-cleanup.js';

export interface IdentityDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  settings: ServiceSettings;
  rateLimits: RateLimits;
  /** The engine: federation resumes its interactions. */
  provider: Provider;
  tokenVerification: TokenVerification;
  /** Signs the service's own sign-in tokens. */
  mainAuthKey: SigningKey;
  /** Encrypt the TOTP secrets at rest. */
  cookieKeys: string[];
  /** Transport plugins, each the default for its channels. */
  transports?: Transport[];
  /** Third-party identity providers, instead of the configured ones. */
  oauthProviders?: OAuthProviderConfig[];
}

export interface Identity {
  flows: AuthFlowEngine;
  steps: StepRegistry;
  authMethods: AuthMethodRegistry;
  oauthProviders: OAuthProviderRegistry;
  transports: TransportRegistry;
  developmentMessages: DevelopmentTransport;
  notifications: SecurityNotifications;
  federation: Federation;
  signing: MainAuthSigning;
  /** Every route acting on the signed-in user's account. */
  signedIn: Middleware;
  /** The sensitive ones: a recent authentication (re-authentication). */
  recentAuthentication: Middleware;
  /** When a main-auth token's session last authenticated its user (what recentAuthentication reads). */
  sessionAuthentications: SessionAuthentications;
  /** The identity API (/api/v2/auth...), federation's callbacks and the identity pages. */
  routers: Router[];
  /** Expired security records and main-auth sessions, for the hourly cleanup. */
  cleanupTasks: CleanupTask[];
  close(): Promise<void>;
}

/**
 * The identity module (docs/identity.md): users, sign-in and registration funnels, sign-in methods,
 * sessions, passwords, verification codes, federation, and the identity API over them.
 */
export async function createIdentity(deps: IdentityDeps): Promise<Identity> {
  const { config, db, clock, logger, rateLimits } = deps;
  const sessionPolicy: SessionPolicy = { ...deps.settings.sessions };
  const signedIn = requireSignedIn({ db, clock, tokenVerification: deps.tokenVerification, sessionPolicy });
  const sessionAuths = sessionAuthentications({ db, clock, sessionPolicy, apiPrefix: identityApiPrefix });
  const recentAuthentication = requireRecentAuthentication({
    maxAgeSeconds: sessionPolicy.reauthenticationMaxAgeSeconds,
    now: () => clock.now(),
    sessions: sessionAuths,
  });

  const { registry: transports, developmentMessages } = await configuredTransports(
    config,
    logger,
    deps.transports,
  );
  const messaging = { db, clock, transports, rateLimits, logger };
  const notifications = new SecurityNotifications({ transports, messages: Messages.load(), clock, logger });
  const { passwordHashing } = deps.settings;
  const passwordDeps: PasswordDeps = {
    ...messaging,
    passwordHashing,
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

  const totp = { box: new SecretBox(deps.cookieKeys), issuerName: new URL(config.issuer).host };
  const authMethods = builtInAuthMethods(totp);
  const oauthProviders = new OAuthProviderRegistry();
  for (const provider of deps.oauthProviders ?? config.oauthProviders) oauthProviders.register(provider);
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
  const planner = new UserFunnelPlanner(authMethods);
  const flows = new AuthFlowEngine(db, clock, steps, new StoredFunnels(db), {
    planner,
    finishers: { registration: createAccountFinisher(authMethods) },
    passwordHashing,
  });
  const signing: MainAuthSigning = {
    key: deps.mainAuthKey,
    issuer: config.issuer,
    audience: config.apiAudience,
  };
  const federation = new Federation({
    provider: deps.provider,
    db,
    clock,
    registry: oauthProviders,
    messages: Messages.load(),
    notifications,
    logger,
    issuer: config.issuer,
    signing,
    sessionPolicy,
    apiPrefix: identityApiPrefix,
    brand: config.brand ?? brandFrom({}),
    planner,
  });
  await prepareDecoyHash(passwordHashing);

  const routers: Router[] = [
    qrApprovePageRoutes(),
    federation.routes(),
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
        reauthenticationRoutes({ ...messaging, totp, sessionPolicy, passwordHashing }),
        authMethodRoutes({ clock, manager: new AuthMethodManager(db, authMethods, notifications) }),
        savedAccountRoutes({ db, clock }),
        linkedProviderRoutes({
          clock,
          linkedProviders: new LinkedProviders(db, oauthProviders, notifications),
          federation,
        }),
        firstPasswordRoutes({ db, clock, notifications, passwordHashing }),
        inboundLoginRoutes({ db, clock, rateLimits, signing, apiPrefix: identityApiPrefix }),
        qrLoginRoutes({ db, clock, rateLimits, sessions: sessionAuths }),
        passwordRoutes(passwordDeps),
        verificationRoutes({ ...messaging, notifications }),
        ...(config.env === 'production'
          ? []
          : [developmentMessagesRoutes(developmentMessages, { allowRemote: config.devMessagesRemote })]),
      ],
    ),
    resetPasswordPageRoutes(passwordDeps),
    onboardingPageRoutes({
      db,
      clock,
      notifications,
      passwordHashing,
      issuer: config.issuer,
      brand: config.brand ?? brandFrom({}),
    }),
    avatarRoutes(db),
  ];

  return {
    flows,
    steps,
    authMethods,
    oauthProviders,
    transports,
    developmentMessages,
    notifications,
    federation,
    signing,
    signedIn,
    recentAuthentication,
    sessionAuthentications: sessionAuths,
    routers,
    cleanupTasks: [...securityRecordsCleanupTasks, ...sessionCleanupTasks],
    close: () => {
      notifications.close();
      return transports.close();
    },
  };
}
