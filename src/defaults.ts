/**
 * Every default of the service in one place (as oidc-provider's lib/helpers/defaults.js): lifetimes,
 * rate-limit rules, the lockout ladder, code limits, cookie names and paths. The modules that apply a
 * rule read its value from here; `createIdentityService({ settings })` overrides what is marked
 * "per service" below (docs/configuration.md lists them). The environment (src/config.ts) is parsed
 * for `npm start` only and feeds these options; a library user passes them directly.
 */

const minute = 60;
const hour = 60 * minute;
const day = 24 * hour;

/** A counter of the shared rate-limit store (src/http/rate-limit.ts): `points` per `durationSeconds`. */
export interface RateLimitSetting {
  points: number;
  durationSeconds: number;
  /** Refuse for this long once exceeded (default: until the window ends). */
  blockDurationSeconds?: number;
}

export const defaults = {
  /** Lifetimes, in seconds (spec: Tokens, Limits). */
  lifetimes: {
    /** Per service: the engine's authorization code. */
    authorizationCode: 10 * minute,
    /** Per service: refresh tokens and the grants behind them. */
    refreshToken: 30 * day,
    /** Per service: the engine's browser session. */
    oidcSession: 30 * day,
    /** Per service: an authorization request waiting for its interaction (sign-in pages). */
    interaction: hour,
    /** Access tokens of user flows (OAuth and main-auth). */
    userAccessToken: 15 * minute,
    /** Access tokens of client_credentials (services). */
    serviceAccessToken: 5 * minute,
    /** A main-auth session, absolute (its idle timeout is `sessions.idleTimeoutSeconds`). */
    mainAuthSession: 30 * day,
    /** An auth-flow session (the steps of one login or registration). */
    flowSession: 5 * minute,
    /** The device cookie: the longest lifetime browsers keep. */
    deviceCookie: 400 * day,
  },
  /** Per service (also SESSION_IDLE_MINUTES, REAUTH_WINDOW_MINUTES): main-auth session rules. */
  sessions: {
    idleTimeoutSeconds: 7 * day,
    reauthenticationMaxAgeSeconds: 5 * minute,
  },
  /**
   * Rate-limit rules by counter name (spec: Limits). Per service: `settings.rateLimits['oauth-token']
   * = { points: 100, durationSeconds: 60 }` changes that rule wherever it is counted.
   */
  rateLimits: {
    'oauth-token': { points: 20, durationSeconds: 60 },
    'oauth-introspect': { points: 100, durationSeconds: 60 },
    'oauth-revoke': { points: 30, durationSeconds: 60 },
    'oauth-authorize': { points: 30, durationSeconds: 60 },
    'oauth-token-unproven': { points: 20, durationSeconds: 60 },
    'oauth-introspect-unproven': { points: 100, durationSeconds: 60 },
    'oauth-revoke-unproven': { points: 30, durationSeconds: 60 },
    'oauth-authorize-unproven': { points: 30, durationSeconds: 60 },
    'identity-flow-start': { points: 10, durationSeconds: 60 },
    'identity-flow-step': { points: 10, durationSeconds: 60 },
    'identity-refresh': { points: 30, durationSeconds: 60 },
    'password-forgot': { points: 5, durationSeconds: hour },
    'password-verify-code': { points: 10, durationSeconds: 60 },
    'password-reset': { points: 5, durationSeconds: hour },
    'verify-send': { points: 3, durationSeconds: 10 * minute },
    'code-send-identifier': { points: 3, durationSeconds: 10 * minute },
    'code-send-ip': { points: 10, durationSeconds: 10 * minute },
    'code-send-cooldown': { points: 1, durationSeconds: 60 },
  } satisfies Record<string, RateLimitSetting>,
  /**
   * Per service: OAuth clients each node keeps built (src/oidc/client-cache.ts). How often it asks the
   * database which clients changed: a client changed through another node takes effect here within it.
   * At most `maxClients` clients are kept, and apart from them at most `maxUnknownIds` ids that no
   * client has (anyone can send those): each bound clears only its own kind when reached.
   */
  clientCache: { changePollMilliseconds: 5_000, maxClients: 20_000, maxUnknownIds: 20_000 },
  /**
   * Per service: requests a process holds at once, in all and from one client address; over either
   * bound a request gets 503 at once (src/http/requests-in-flight.ts). Each held request costs heap (its
   * context, its body so far): the bound keeps a flood of never-finished requests from exhausting it.
   */
  requestsInFlight: { total: 512, perAddress: 128 },
  /**
   * Per service: argon2id parameters of new password hashes and of the decoy checked for unknown users
   * (OWASP's recommendation: m=19456 KiB, t=2, p=1). A hash is checked at the parameters it was made
   * with, so changing them never locks anyone out. Tests use cheaper ones (test/support/test-service.ts).
   */
  passwordHashing: { memoryCost: 19456, timeCost: 2, parallelism: 1 },
  /** Failed logins (spec: Limits; src/identity/brute-force). */
  lockout: {
    /** Per account and source: after `failures` in a row, wait `lockSeconds` (highest rung first). */
    ladder: [
      { failures: 20, lockSeconds: 30 * minute },
      { failures: 10, lockSeconds: 5 * minute },
      { failures: 5, lockSeconds: 30 },
    ],
    /** Per IP, any accounts, in a fixed window. */
    ipThrottle: {
      windowSeconds: 10 * minute,
      delay: { failures: 20, lockSeconds: 60 },
      block: { failures: 50, lockSeconds: 30 * minute },
    },
    /** Per account, from unknown sources, in a sliding window (ASVS 2.2.1). */
    accountFailures: { failures: 100, windowSeconds: hour },
    /** How long a login attempt holds its claim on the counters before it is presumed dead. */
    claimLifetimeSeconds: 30,
  },
  /** One-time codes sent by email or SMS (spec: Limits). */
  codes: {
    lifetimeSeconds: {
      contact_verify: 10 * minute,
      login: 10 * minute,
      reset_password: 10 * minute,
      sso_otc: 60,
    },
    maxAttempts: 5,
    /** Digits of a code. */
    length: 6,
  },
  /**
   * A phone number typed without `+` (as people write national numbers: `8 916 123-45-67`) is read as
   * a number of this country (ISO 3166 code) and stored in E.164 (`+79161234567`).
   */
  phoneDefaultCountry: 'RU',
  /** Cookie names of our own (the engine's are named in src/oidc/provider.ts). */
  cookies: {
    refreshToken: 'service_id_refresh_token',
    device: 'service_id_device',
  },
  /** Paths. */
  paths: {
    identityApi: '/api/v2/identity',
    oauth: {
      authorization: '/oauth/authorize',
      token: '/oauth/token',
      userinfo: '/oauth/userinfo',
      jwks: '/.well-known/jwks.json',
      end_session: '/oauth/end_session',
      introspection: '/oauth/introspect',
      revocation: '/oauth/revoke',
      registration: '/oauth/clients/register',
    },
  },
} as const;

type Widen<T> = T extends string
  ? string
  : T extends number
    ? number
    : T extends readonly (infer Item)[]
      ? Widen<Item>[]
      : { [Key in keyof T]: Widen<T[Key]> };

/** The options the service applies: `defaults`, with what the caller overrode. */
export type ServiceSettings = Widen<typeof defaults> & {
  rateLimits: Record<string, RateLimitSetting>;
};

/** What `createIdentityService({ settings })` takes: any part of `ServiceSettings`. */
export interface SettingsOverrides {
  lifetimes?: Partial<
    Pick<ServiceSettings['lifetimes'], 'authorizationCode' | 'refreshToken' | 'oidcSession' | 'interaction'>
  >;
  sessions?: Partial<ServiceSettings['sessions']>;
  clientCache?: Partial<ServiceSettings['clientCache']>;
  requestsInFlight?: Partial<ServiceSettings['requestsInFlight']>;
  passwordHashing?: Partial<ServiceSettings['passwordHashing']>;
  rateLimits?: Record<string, RateLimitSetting>;
  /** The lockout ladder: rungs of `failures` in a row → `lockSeconds` (any order; at least one rung). */
  lockout?: { ladder?: ServiceSettings['lockout']['ladder'] };
  /** One-time codes: digits (4 to 10), attempts, lifetime per purpose (seconds). */
  codes?: {
    length?: number;
    maxAttempts?: number;
    lifetimeSeconds?: Partial<ServiceSettings['codes']['lifetimeSeconds']>;
  };
  /** Names of the service's own cookies (e.g. to keep two services on one domain apart). */
  cookies?: Partial<ServiceSettings['cookies']>;
}

/** `defaults` with the overrides applied (each group merged key by key). */
export function resolveSettings(overrides: SettingsOverrides = {}): ServiceSettings {
  const settings = structuredClone(defaults) as unknown as ServiceSettings;
  Object.assign(settings.lifetimes, overrides.lifetimes);
  Object.assign(settings.sessions, overrides.sessions);
  Object.assign(settings.clientCache, overrides.clientCache);
  Object.assign(settings.requestsInFlight, overrides.requestsInFlight);
  Object.assign(settings.passwordHashing, overrides.passwordHashing);
  Object.assign(settings.rateLimits, overrides.rateLimits);
  if (overrides.lockout?.ladder) {
    if (overrides.lockout.ladder.length === 0) throw new Error('settings.lockout.ladder needs a rung');
    // Highest rung first, as the ladder is read.
    Object.assign(settings.lockout, {
      ladder: [...overrides.lockout.ladder].sort((a, b) => b.failures - a.failures),
    });
  }
  const { lifetimeSeconds, ...codes } = overrides.codes ?? {};
  Object.assign(settings.codes, codes);
  Object.assign(settings.codes.lifetimeSeconds, lifetimeSeconds);
  if (!Number.isInteger(settings.codes.length) || settings.codes.length < 4 || settings.codes.length > 10) {
    throw new Error('settings.codes.length must be an integer from 4 to 10');
  }
  Object.assign(settings.cookies, overrides.cookies);
  return settings;
}

export type RateLimitRuleName = keyof typeof defaults.rateLimits;

/** A rate-limit rule (src/http/rate-limit.ts RateLimitRule) with its default points and window. */
export function defaultRateLimitRule<Name extends RateLimitRuleName>(name: Name) {
  return { name, ...defaults.rateLimits[name] };
}
