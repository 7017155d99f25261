import path from 'node:path';
import { z } from 'zod';
import { brandFrom, brandSettings, type Brand } from './brand.js';
import { oauthProviderListSchema } from './identity/federation/oauth-provider-config.js';
import { defaults } from './defaults.js';

/**
 * The service's whole configuration, read from environment variables once at start.
 * Every variable is named here with its default; a bad value stops the start with a one-line
 * message naming the variable (see `ConfigError`).
 */

const pem = z
  .string()
  .transform((value) => value.replace(/\\n/g, '\n').trim())
  .refine(
    (value) => /^-----BEGIN (RSA )?PRIVATE KEY-----[\s\S]+-----END (RSA )?PRIVATE KEY-----$/.test(value),
    {
      message: 'must be a PEM private key (-----BEGIN PRIVATE KEY----- ...)',
    },
  );

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

/** TRUST_PROXY: a flag (true = one proxy) or the number of proxies. */
const trustedProxyHops = z.union(
  [booleanFlag.transform((trusted) => (trusted ? 1 : 0)), z.coerce.number().int().min(0).max(10)],
  { error: 'must be true, false or the number of trusted proxies (0-10)' },
);

const emptyAsUndefined = (value: unknown) => (value === '' ? undefined : value);

export const environmentSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Listen address; default 127.0.0.1 outside production (a laptop), 0.0.0.0 in production. */
  HOST: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  /**
   * Public base address of the service; the issuer of every token. May have a path
   * (https://host/idp): the service then answers under that path only. No query, no fragment.
   */
  ISSUER: z.url({ protocol: /^https?$/ }).optional(),
  /** PostgreSQL connection string; unset = embedded PGlite in DATA_DIR. */
  DATABASE_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^postgres(ql)?$/ }).optional()),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** A PostgreSQL schema of the service's own (created if missing), to share a database with a host. */
  DATABASE_SCHEMA: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier (e.g. identity)')
      .optional(),
  ),
  /** Longest wait (ms) for a PostgreSQL connection, a new or a pooled one; then the request answers 503. */
  DATABASE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(5_000),
  /**
   * The embedded database and the development secrets. Unset, nothing is written to disk (an in-memory
   * database, secrets kept in memory); `npm start` and the CLI default it to ./.data (loadMainConfig).
   */
  DATA_DIR: z.string().min(1).optional(),
  /** Processes serving HTTP on one machine (node:cluster); more than 1 needs DATABASE_URL. */
  HTTP_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  /** RSA private key (PEM) that signs OAuth/OIDC tokens. Required in production. */
  OIDC_PRIVATE_KEY: z.preprocess(emptyAsUndefined, pem.optional()),
  /** RSA private key (PEM) that signs main-auth tokens; a different key from OIDC_PRIVATE_KEY. */
  MAIN_AUTH_PRIVATE_KEY: z.preprocess(emptyAsUndefined, pem.optional()),
  /** Comma-separated secrets for signed cookies; the first signs, all verify. Each >= 32 characters. */
  COOKIE_KEYS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .transform((value) => value.split(',').map((key) => key.trim()))
      .pipe(z.array(z.string().min(32, 'each key must have at least 32 characters')).min(1))
      .optional(),
  ),
  /** Audience (RFC 8707 resource) of the ecosystem access tokens. */
  API_AUDIENCE: z.string().min(1).default('urn:ecosystem:api'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Behind reverse proxies: true (one proxy) or the number of proxies in front of the service, each
   * appending to X-Forwarded-For; the client is that many addresses from the right. false: ignore it.
   */
  TRUST_PROXY: z.preprocess(emptyAsUndefined, trustedProxyHops.default(0)),
  /** How email is sent: smtp (SMTP_URL), development (kept in memory and logged; not in production), none. */
  EMAIL_TRANSPORT: z.preprocess(emptyAsUndefined, z.enum(['development', 'smtp', 'none']).optional()),
  /** smtp://user:password@host:587 (STARTTLS) or smtps://...:465. */
  SMTP_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^smtps?$/ }).optional()),
  /** From header of our emails; default `Identity <no-reply@<issuer host>>`. */
  MAIL_FROM: z.preprocess(emptyAsUndefined, z.string().min(3).max(320).optional()),
  /** How text messages are sent: webhook (SMS_WEBHOOK_URL), development, none. */
  SMS_TRANSPORT: z.preprocess(emptyAsUndefined, z.enum(['development', 'webhook', 'none']).optional()),
  /** The SMS gateway endpoint receiving signed JSON POSTs {to, text, code}. */
  SMS_WEBHOOK_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).optional()),
  /** HMAC-SHA-256 secret signing the webhook requests; at least 32 characters. */
  SMS_WEBHOOK_SECRET: z.preprocess(
    emptyAsUndefined,
    z.string().min(32, 'must have at least 32 characters').optional(),
  ),
  /** Let the development outbox (GET /api/v2/identity/dev/messages) answer other machines too; never in production. */
  DEV_MESSAGES_REMOTE: z.preprocess(emptyAsUndefined, booleanFlag.default(false)),
  /** Where platform events go: in-process subscribers (one node) or NATS JetStream (several nodes). */
  EVENT_BUS: z.preprocess(emptyAsUndefined, z.enum(['embedded', 'nats']).default('embedded')),
  /** NATS server(s) for EVENT_BUS=nats, comma-separated. */
  NATS_URL: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(
        /^(nats|tls):\/\/[^,\s]+(,(nats|tls):\/\/[^,\s]+)*$/,
        'must be nats://host:port (comma-separated)',
      )
      .default('nats://127.0.0.1:4222'),
  ),
  /** JetStream stream of the platform events (created when missing). */
  NATS_STREAM: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be letters, digits, - or _')
      .default('PLATFORM_EVENTS'),
  ),
  /** Put before every event subject (e.g. "staging."), so environments can share one NATS server. */
  NATS_SUBJECT_PREFIX: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^([A-Za-z0-9_-]+\.)*$/, 'must be dot-terminated tokens, e.g. "staging."')
      .default(''),
  ),
  /**
   * How the service signs in to NATS (EVENT_BUS=nats): a user and password, or a token. Without them it
   * connects anonymously, and a broker that lets anyone in lets anyone publish crm's events (which
   * move the dashboards) and the platform's, or read them.
   */
  NATS_USER: z.preprocess(emptyAsUndefined, z.string().optional()),
  NATS_PASSWORD: z.preprocess(emptyAsUndefined, z.string().optional()),
  NATS_TOKEN: z.preprocess(emptyAsUndefined, z.string().optional()),
  /** Minutes without activity after which a main-auth session ends (default 7 days; session-policy.ts). */
  SESSION_IDLE_MINUTES: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number()
      .int()
      .min(5)
      .max(30 * 24 * 60)
      .default(defaults.sessions.idleTimeoutSeconds / 60),
  ),
  /** Minutes a login or re-authentication allows sensitive account changes (default 5; session-policy.ts). */
  REAUTH_WINDOW_MINUTES: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number()
      .int()
      .min(1)
      .max(60)
      .default(defaults.sessions.reauthenticationMaxAgeSeconds / 60),
  ),
  /** Origin of crm's API (the snapshot reads); unset: the dashboards show no crm snapshots. */
  CRM_BASE_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).optional()),
  /** The client-credentials client management reads crm's snapshots with (service:crm.* scopes). */
  CRM_CLIENT_ID: z.preprocess(emptyAsUndefined, z.string().max(100).optional()),
  CRM_CLIENT_SECRET: z.preprocess(emptyAsUndefined, z.string().optional()),
  /**
   * Third-party identity providers (plugin kind oauth_provider): a JSON array of provider
   * configurations, e.g. [{"id":"google","preset":"google","clientId":"...","clientSecret":"..."}]
   * (docs/federation.md).
   */
  FEDERATION_PROVIDERS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .transform((value, context) => {
        try {
          return JSON.parse(value) as unknown;
        } catch {
          context.addIssue({ code: 'custom', message: 'must be a JSON array of provider configurations' });
          return z.NEVER;
        }
      })
      .pipe(oauthProviderListSchema)
      .default([]),
  ),
  /** Consume crm's events in this process (default true). */
  CRM_CONSUMER: z.preprocess(emptyAsUndefined, booleanFlag.default(true)),
  /** JetStream stream of the management domain: crm's events and management's alerts (created when missing). */
  NATS_MANAGEMENT_STREAM: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be letters, digits, - or _')
      .default('MANAGEMENT_EVENTS'),
  ),
  /** Durable consumer name of management on that stream (nodes sharing it share the work). */
  NATS_CRM_CONSUMER: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be letters, digits, - or _')
      .default('management'),
  ),
  /** Bearer token Prometheus presents at GET /metrics; unset: /metrics answers this machine only. */
  METRICS_TOKEN: z.preprocess(
    emptyAsUndefined,
    z.string().min(32, 'must have at least 32 characters').optional(),
  ),
  // The product's name, logo and primary colour on the pages (src/brand.ts, docs/pages.md).
  ...brandSettings.shape,
});

export type Environment = z.infer<typeof environmentSchema>;

export interface Config {
  env: Environment['NODE_ENV'];
  port: number;
  host: string;
  issuer: string;
  databaseUrl: string | undefined;
  /** The PostgreSQL schema of the service's tables; undefined: the default one. */
  databaseSchema: string | undefined;
  databasePoolMax: number;
  databaseTimeoutMs: number;
  httpWorkers: number;
  /** Unset: nothing written to disk (see DATA_DIR). */
  dataDir: string | undefined;
  oidcPrivateKey: string | undefined;
  mainAuthPrivateKey: string | undefined;
  cookieKeys: string[] | undefined;
  apiAudience: string;
  logLevel: Environment['LOG_LEVEL'];
  trustProxy: boolean;
  /** Proxies in front of the service whose X-Forwarded-For entries are trusted (0 when not trusted). */
  trustedProxyHops: number;
  emailTransport: 'development' | 'smtp' | 'none';
  smtpUrl: string | undefined;
  mailFrom: string;
  smsTransport: 'development' | 'webhook' | 'none';
  smsWebhookUrl: string | undefined;
  smsWebhookSecret: string | undefined;
  /** The development outbox answers requests from other machines, not only from loopback. */
  devMessagesRemote: boolean;
  eventBus: Environment['EVENT_BUS'];
  nats: { url: string; stream: string; subjectPrefix: string; credentials: NatsCredentials };
  sessions: { idleTimeoutSeconds: number; reauthenticationMaxAgeSeconds: number };
  /** What the pages show of the product (BRAND_*). */
  brand?: Brand;
  /** Third-party identity providers from FEDERATION_PROVIDERS (docs/federation.md). */
  oauthProviders: Environment['FEDERATION_PROVIDERS'];
  crm: {
    baseUrl: string | undefined;
    clientId: string | undefined;
    clientSecret: string | undefined;
    consumer: boolean;
    stream: string;
    durableName: string;
  };
  /** See METRICS_TOKEN. */
  metricsToken: string | undefined;
}

/** How the service authenticates to NATS (NATS_USER and NATS_PASSWORD, or NATS_TOKEN); empty: anonymously. */
export interface NatsCredentials {
  user?: string;
  pass?: string;
  token?: string;
}

/** Variables whose values never appear in an error message. */
const secretVariables = new Set([
  'COOKIE_KEYS',
  'SMTP_URL',
  'SMS_WEBHOOK_SECRET',
  'CRM_CLIENT_SECRET',
  'METRICS_TOKEN',
  'FEDERATION_PROVIDERS',
  'NATS_PASSWORD',
  'NATS_TOKEN',
]);

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`Invalid configuration: ${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment; throws `ConfigError` naming the first offending variable. */
/** Where `npm start` and the CLI keep the embedded database and the development secrets by default. */
export const defaultDataDir = './.data';

/** The configuration of `npm start` and the CLI: the environment, with DATA_DIR defaulting to ./.data. */
export function loadMainConfig(source: NodeJS.ProcessEnv = process.env): MainConfig {
  return loadConfig({ DATA_DIR: defaultDataDir, ...source }) as MainConfig;
}

/** A configuration with a data directory (loadMainConfig). */
export type MainConfig = Config & { dataDir: string };

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const parsed = environmentSchema.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? 'environment');
    const shown =
      variable.endsWith('_KEY') || secretVariables.has(variable) ? '' : describeValue(source[variable]);
    throw new ConfigError(variable, `${issue.message}${shown}`);
  }
  const environment = parsed.data;
  if (environment.NODE_ENV === 'production') {
    for (const variable of ['OIDC_PRIVATE_KEY', 'MAIN_AUTH_PRIVATE_KEY', 'COOKIE_KEYS', 'ISSUER'] as const) {
      if (environment[variable] === undefined) {
        throw new ConfigError(variable, 'is required when NODE_ENV=production');
      }
    }
  }
  if (environment.NODE_ENV === 'production' && environment.DEV_MESSAGES_REMOTE) {
    throw new ConfigError('DEV_MESSAGES_REMOTE', 'is not allowed when NODE_ENV=production');
  }
  const issuer = (environment.ISSUER ?? `http://localhost:${environment.PORT}`).replace(/\/+$/, '');
  const issuerUrl = new URL(issuer);
  if (issuerUrl.search || issuerUrl.hash || issuer.includes('?') || issuer.includes('#')) {
    throw new ConfigError('ISSUER', 'must have no query or fragment (e.g. https://id.example.com/idp)');
  }
  // Production over plain http: passwords and tokens in clear, cookies not Secure, no HSTS. Only a
  // loopback issuer (a benchmark, a proxy on the same machine) may be http.
  if (
    environment.NODE_ENV === 'production' &&
    issuerUrl.protocol === 'http:' &&
    !['localhost', '127.0.0.1', '[::1]'].includes(issuerUrl.hostname)
  ) {
    throw new ConfigError('ISSUER', 'must be https when NODE_ENV=production (http only on loopback)');
  }
  if (
    environment.OIDC_PRIVATE_KEY !== undefined &&
    environment.OIDC_PRIVATE_KEY === environment.MAIN_AUTH_PRIVATE_KEY
  ) {
    throw new ConfigError('MAIN_AUTH_PRIVATE_KEY', 'must be a different key from OIDC_PRIVATE_KEY');
  }
  if (environment.HTTP_WORKERS > 1 && environment.DATABASE_URL === undefined) {
    throw new ConfigError(
      'HTTP_WORKERS',
      'above 1 needs DATABASE_URL (the embedded database serves one process)',
    );
  }
  if (environment.CRM_BASE_URL && (!environment.CRM_CLIENT_ID || !environment.CRM_CLIENT_SECRET)) {
    throw new ConfigError('CRM_CLIENT_ID', 'and CRM_CLIENT_SECRET are required when CRM_BASE_URL is set');
  }
  const messaging = resolveMessaging(environment, issuer);
  return {
    env: environment.NODE_ENV,
    port: environment.PORT,
    host: environment.HOST ?? (environment.NODE_ENV === 'production' ? '0.0.0.0' : '127.0.0.1'),
    issuer,
    databaseUrl: environment.DATABASE_URL,
    databaseSchema: environment.DATABASE_SCHEMA,
    databasePoolMax: environment.DATABASE_POOL_MAX,
    databaseTimeoutMs: environment.DATABASE_TIMEOUT_MS,
    httpWorkers: environment.HTTP_WORKERS,
    dataDir: environment.DATA_DIR === undefined ? undefined : path.resolve(environment.DATA_DIR),
    oidcPrivateKey: environment.OIDC_PRIVATE_KEY,
    mainAuthPrivateKey: environment.MAIN_AUTH_PRIVATE_KEY,
    cookieKeys: environment.COOKIE_KEYS,
    apiAudience: environment.API_AUDIENCE,
    logLevel: environment.LOG_LEVEL,
    trustProxy: environment.TRUST_PROXY > 0,
    trustedProxyHops: environment.TRUST_PROXY,
    ...messaging,
    devMessagesRemote: environment.DEV_MESSAGES_REMOTE,
    eventBus: environment.EVENT_BUS,
    nats: {
      url: environment.NATS_URL,
      stream: environment.NATS_STREAM,
      subjectPrefix: environment.NATS_SUBJECT_PREFIX,
      credentials: {
        ...(environment.NATS_USER !== undefined ? { user: environment.NATS_USER } : {}),
        ...(environment.NATS_PASSWORD !== undefined ? { pass: environment.NATS_PASSWORD } : {}),
        ...(environment.NATS_TOKEN !== undefined ? { token: environment.NATS_TOKEN } : {}),
      },
    },
    sessions: {
      idleTimeoutSeconds: environment.SESSION_IDLE_MINUTES * 60,
      reauthenticationMaxAgeSeconds: environment.REAUTH_WINDOW_MINUTES * 60,
    },
    brand: brandFrom(environment),
    oauthProviders: environment.FEDERATION_PROVIDERS,
    crm: {
      baseUrl: environment.CRM_BASE_URL?.replace(/\/+$/, ''),
      clientId: environment.CRM_CLIENT_ID,
      clientSecret: environment.CRM_CLIENT_SECRET,
      consumer: environment.CRM_CONSUMER,
      stream: environment.NATS_MANAGEMENT_STREAM,
      durableName: environment.NATS_CRM_CONSUMER,
    },
    metricsToken: environment.METRICS_TOKEN,
  };
}

/**
 * Which transports deliver codes. Default: the configured real transport (SMTP_URL, SMS_WEBHOOK_URL),
 * else the development transport outside production. Production refuses the development transport (it
 * logs codes) and refuses to start with no real transport at all: registration and password reset
 * can't work without one.
 */
function resolveMessaging(environment: Environment, issuer: string) {
  const production = environment.NODE_ENV === 'production';
  const fallback = production ? 'none' : 'development';
  const emailTransport = environment.EMAIL_TRANSPORT ?? (environment.SMTP_URL ? 'smtp' : fallback);
  const smsTransport = environment.SMS_TRANSPORT ?? (environment.SMS_WEBHOOK_URL ? 'webhook' : fallback);
  if (emailTransport === 'smtp' && !environment.SMTP_URL) {
    throw new ConfigError('SMTP_URL', 'is required when EMAIL_TRANSPORT=smtp');
  }
  if (smsTransport === 'webhook') {
    if (!environment.SMS_WEBHOOK_URL) {
      throw new ConfigError('SMS_WEBHOOK_URL', 'is required when SMS_TRANSPORT=webhook');
    }
    if (!environment.SMS_WEBHOOK_SECRET) {
      throw new ConfigError('SMS_WEBHOOK_SECRET', 'is required when SMS_TRANSPORT=webhook');
    }
  }
  if (production) {
    if (emailTransport === 'development') {
      throw new ConfigError('EMAIL_TRANSPORT', 'development is not allowed when NODE_ENV=production');
    }
    if (smsTransport === 'development') {
      throw new ConfigError('SMS_TRANSPORT', 'development is not allowed when NODE_ENV=production');
    }
    if (emailTransport === 'none' && smsTransport === 'none') {
      throw new ConfigError(
        'EMAIL_TRANSPORT',
        'or SMS_TRANSPORT must name a real transport when NODE_ENV=production (set SMTP_URL or SMS_WEBHOOK_URL)',
      );
    }
  }
  return {
    emailTransport,
    smtpUrl: environment.SMTP_URL,
    mailFrom: environment.MAIL_FROM ?? `Identity <no-reply@${new URL(issuer).hostname}>`,
    smsTransport,
    smsWebhookUrl: environment.SMS_WEBHOOK_URL,
    smsWebhookSecret: environment.SMS_WEBHOOK_SECRET,
  } as const;
}

function describeValue(value: string | undefined): string {
  if (value === undefined) return '';
  const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
  return ` (got "${shown}")`;
}
