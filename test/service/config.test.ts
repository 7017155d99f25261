import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { generateRsaPrivateKeyPem } from '../../src/keys/development-secrets.js';
import { runEntryPoint } from '../support/run-process.js';

/** What production needs to start: keys, cookie keys, the issuer and a real transport. */
const productionEnvironment = () => ({
  NODE_ENV: 'production',
  ISSUER: 'https://id.example.com',
  OIDC_PRIVATE_KEY: generateRsaPrivateKeyPem(),
  MAIN_AUTH_PRIVATE_KEY: generateRsaPrivateKeyPem(),
  COOKIE_KEYS: 'a-cookie-key-of-at-least-32-characters!!',
  SMTP_URL: 'smtp://mail.example.com:587',
});

describe('configuration from the environment', () => {
  it('has working defaults for a laptop', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      env: 'development',
      port: 3000,
      issuer: 'http://localhost:3000',
      databaseUrl: undefined,
    });
    expect(config.dataDir).toBeUndefined();
  });

  it.each([
    ['PORT', { PORT: 'eighty' }],
    ['ISSUER', { ISSUER: 'not a url' }],
    ['ISSUER', { ISSUER: 'https://id.example.com/idp?tenant=1' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://localhost/db' }],
    ['OIDC_PRIVATE_KEY', { OIDC_PRIVATE_KEY: 'not a pem' }],
    ['COOKIE_KEYS', { COOKIE_KEYS: 'short' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'maybe' }],
    ['SESSION_IDLE_MINUTES', { SESSION_IDLE_MINUTES: '1' }],
    ['REAUTH_WINDOW_MINUTES', { REAUTH_WINDOW_MINUTES: '0' }],
  ])('names %s when its value is invalid', (variable, environment) => {
    expect(() => loadConfig(environment)).toThrow(ConfigError);
    expect(() => loadConfig(environment)).toThrow(new RegExp(`^Invalid configuration: ${variable} `));
  });

  it('TRUST_PROXY: true trusts one proxy, a number that many; false or unset none', () => {
    const hops = (value?: string) => {
      const config = loadConfig(value === undefined ? {} : { TRUST_PROXY: value });
      return [config.trustProxy, config.trustedProxyHops];
    };
    expect(hops()).toEqual([false, 0]);
    expect(hops('false')).toEqual([false, 0]);
    expect(hops('0')).toEqual([false, 0]);
    expect(hops('true')).toEqual([true, 1]);
    expect(hops('1')).toEqual([true, 1]);
    expect(hops('2')).toEqual([true, 2]);
    expect(() => loadConfig({ TRUST_PROXY: '-1' })).toThrow(/^Invalid configuration: TRUST_PROXY /);
  });

  it('ends idle sessions after 7 days unless SESSION_IDLE_MINUTES says otherwise', () => {
    expect(loadConfig({}).sessions.idleTimeoutSeconds).toBe(7 * 24 * 60 * 60);
    expect(loadConfig({ SESSION_IDLE_MINUTES: '90' }).sessions.idleTimeoutSeconds).toBe(5400);
  });

  it('allows sensitive changes 5 minutes after an authentication unless REAUTH_WINDOW_MINUTES says otherwise', () => {
    expect(loadConfig({}).sessions.reauthenticationMaxAgeSeconds).toBe(300);
    expect(loadConfig({ REAUTH_WINDOW_MINUTES: '10' }).sessions.reauthenticationMaxAgeSeconds).toBe(600);
  });

  it('listens on loopback only outside production, on every address in production, or where HOST says', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ NODE_ENV: 'test' }).host).toBe('127.0.0.1');
    const production = productionEnvironment();
    expect(loadConfig(production).host).toBe('0.0.0.0');
    expect(loadConfig({ ...production, HOST: '10.0.0.5' }).host).toBe('10.0.0.5');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
  });

  it('keeps the development outbox to loopback unless DEV_MESSAGES_REMOTE opts in (never in production)', () => {
    expect(loadConfig({}).devMessagesRemote).toBe(false);
    expect(loadConfig({ DEV_MESSAGES_REMOTE: 'true' }).devMessagesRemote).toBe(true);
    expect(() => loadConfig({ DEV_MESSAGES_REMOTE: 'sure' })).toThrow(/DEV_MESSAGES_REMOTE/);
    expect(() => loadConfig({ ...productionEnvironment(), DEV_MESSAGES_REMOTE: 'true' })).toThrow(
      /^Invalid configuration: DEV_MESSAGES_REMOTE /,
    );
  });

  it('refuses production without keys, naming the variable', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', ISSUER: 'https://id.example.com' })).toThrow(
      /OIDC_PRIVATE_KEY/,
    );
  });

  it('refuses HTTP_WORKERS above 1 on the embedded database (one process can open it)', () => {
    expect(() => loadConfig({ HTTP_WORKERS: '2' })).toThrow(
      /^Invalid configuration: HTTP_WORKERS .*DATABASE_URL/,
    );
    expect(loadConfig({ HTTP_WORKERS: '2', DATABASE_URL: 'postgres://localhost/idp' }).httpWorkers).toBe(2);
    expect(loadConfig({}).httpWorkers).toBe(1);
  });

  it('refuses the same key for OAuth and main-auth tokens', () => {
    const pem = generateRsaPrivateKeyPem();
    expect(() => loadConfig({ OIDC_PRIVATE_KEY: pem, MAIN_AUTH_PRIVATE_KEY: pem })).toThrow(
      /MAIN_AUTH_PRIVATE_KEY/,
    );
  });

  it('npm start refuses to start in production without OIDC_PRIVATE_KEY: one line, exit 1', async () => {
    const result = await runEntryPoint('src/main.ts', [], {
      NODE_ENV: 'production',
      ISSUER: 'https://id.example.com',
    });
    expect(result.code).toBe(1);
    expect(
      result.stderr
        .trim()
        .split('\n')
        .filter((line) => !line.includes('oidc-provider WARNING')),
    ).toEqual(['Invalid configuration: OIDC_PRIVATE_KEY is required when NODE_ENV=production']);
  });

  it('npm start stops on an invalid value with one line naming it', async () => {
    const result = await runEntryPoint('src/main.ts', [], { PORT: '70000' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^Invalid configuration: PORT .*\n$/m);
  });
});
