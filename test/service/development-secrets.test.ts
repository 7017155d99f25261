import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { resolveSecrets } from '../../src/keys/development-secrets.js';
import { signingKeyFromPem } from '../../src/keys/signing-keys.js';
import { createLogger } from '../../src/logger.js';

describe('development secrets', () => {
  it('are generated once into the data directory (owner-only), reused at the next start, with a warning', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'idp-secrets-'));
    const warnings: string[] = [];
    const logger = createLogger('warn');
    logger.warn = ((_fields: unknown, message: string) => warnings.push(message)) as never;
    const config = loadConfig({ DATA_DIR: dataDir });

    const first = await resolveSecrets(config, logger);
    const second = await resolveSecrets(config, logger);
    expect(second).toEqual(first);
    expect((await signingKeyFromPem(first.oidcPrivateKey, 'oidc')).kid).not.toBe(
      (await signingKeyFromPem(first.mainAuthPrivateKey, 'main-auth')).kid,
    );
    const file = path.join(dataDir, 'development-secrets.json');
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/OIDC_PRIVATE_KEY, MAIN_AUTH_PRIVATE_KEY, COOKIE_KEYS not set/);
    await fs.rm(dataDir, { recursive: true, force: true });
  });

  it('are not used for what is configured', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'idp-secrets-'));
    const cookieKeys = 'k'.repeat(40);
    const secrets = await resolveSecrets(
      loadConfig({ DATA_DIR: dataDir, COOKIE_KEYS: cookieKeys }),
      createLogger('silent'),
    );
    expect(secrets.cookieKeys).toEqual([cookieKeys]);
    const stored = JSON.parse(await fs.readFile(path.join(dataDir, 'development-secrets.json'), 'utf8'));
    expect(stored).not.toHaveProperty('cookieKeys');
    await fs.rm(dataDir, { recursive: true, force: true });
  });
});
