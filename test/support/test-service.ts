import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { SettingsOverrides } from '../../src/defaults.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import { createHttpServer } from '../../src/http/http-server.js';
import { generateRsaPrivateKeyPem, type Secrets } from '../../src/keys/development-secrets.js';
import type { OAuthProviderConfig } from '../../src/identity/federation/oauth-provider-config.js';
import type { Transport } from '../../src/identity/transports/transport.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { createIdentityService, type IdentityService } from '../../src/service.js';
import { createTestDatabase } from './database.js';

/**
 * argon2id parameters of the services tests start (and of fixture users' hashes): the cheapest argon2
 * allows, ~50 times less work than production's per sign-in. What the parameters are doesn't change
 * what a test checks; test/identity/password-hashing.test.ts proves production's are the default.
 */
export const testPasswordHashing = { memoryCost: 1024, timeCost: 1, parallelism: 1 };

let sharedSecrets: Secrets | undefined;

/** One set of keys per test process: RSA generation is the slow part of starting a service. */
export function testSecrets(): Secrets {
  sharedSecrets ??= {
    oidcPrivateKey: generateRsaPrivateKeyPem(),
    mainAuthPrivateKey: generateRsaPrivateKeyPem(),
    cookieKeys: ['test-cookie-key-0123456789abcdefghijklmnopqrstuvwxyz'],
  };
  return sharedSecrets;
}

export interface TestService {
  service: IdentityService;
  issuer: string;
  database: DatabaseHandle & { url?: string };
  server: http.Server;
  url(path: string): string;
  /** Stops the server and the service; drops the database unless it was given. */
  close(): Promise<void>;
}

export interface TestServiceOptions {
  database?: DatabaseHandle & { url?: string };
  secrets?: Partial<Secrets>;
  clock?: Clock;
  env?: Record<string, string>;
  /** Transport plugins registered before the configured transports. */
  transports?: Transport[];
  /** Listen on this port (e.g. to restart a service at the same issuer); default: any free port. */
  port?: number;
  /** Instead of a pino logger at LOG_LEVEL (e.g. one writing to a stream the test reads). */
  logger?: Logger;
  /** Third-party identity providers (oauth_provider plugins). */
  oauthProviders?: OAuthProviderConfig[];
  /** Instead of the defaults of src/defaults.ts (passwordHashing: testPasswordHashing unless given). */
  settings?: SettingsOverrides;
  /** The issuer's path (e.g. '/idp'): the service answers under it. */
  issuerPath?: string;
}

/** The service on a real HTTP port of 127.0.0.1, with its own database (a copy of the migrated one). */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const ownsDatabase = options.database === undefined;
  const database = options.database ?? (await createTestDatabase());
  let handler: http.RequestListener = (_request, response) => {
    response.statusCode = 503;
    response.end();
  };
  // The server src/run-service.ts runs the service on.
  const server = createHttpServer((request, response) => handler(request, response), options.issuerPath);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}${options.issuerPath ?? ''}`;
  const config: Config = loadConfig({
    NODE_ENV: 'test',
    ISSUER: issuer,
    PORT: String(port),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: '/nonexistent-test-data-dir',
    ...options.env,
  });
  const service = await createIdentityService({
    config,
    database,
    logger: options.logger ?? createLogger(config.logLevel),
    clock: options.clock ?? systemClock,
    secrets: { ...testSecrets(), ...options.secrets },
    ...(options.transports ? { transports: options.transports } : {}),
    ...(options.oauthProviders ? { oauthProviders: options.oauthProviders } : {}),
    settings: {
      ...options.settings,
      passwordHashing: options.settings?.passwordHashing ?? testPasswordHashing,
    },
  });
  handler = service.app.callback();
  return {
    service,
    issuer,
    database,
    server,
    url: (path) => `${issuer}${path}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.close();
      if (ownsDatabase) await database.close();
    },
  };
}
