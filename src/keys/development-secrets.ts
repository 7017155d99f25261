import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';

/** The secrets the service runs with, after filling the unset ones outside production. */
export interface Secrets {
  oidcPrivateKey: string;
  mainAuthPrivateKey: string;
  cookieKeys: string[];
}

const storedSecretsSchema = z.object({
  oidcPrivateKey: z.string().optional(),
  mainAuthPrivateKey: z.string().optional(),
  cookieKeys: z.array(z.string()).optional(),
});

export const developmentSecretsFile = 'development-secrets.json';

export function generateRsaPrivateKeyPem(): string {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/**
 * Returns the configured secrets. Outside production, a secret that is not configured is generated
 * once into DATA_DIR/development-secrets.json (mode 0600) and reused at the next start, with a warning:
 * such keys are fine on a laptop and wrong anywhere else. (loadConfig already refuses production
 * without them.)
 */
export async function resolveSecrets(config: Config, logger: Logger): Promise<Secrets> {
  const { oidcPrivateKey, mainAuthPrivateKey, cookieKeys } = config;
  if (oidcPrivateKey && mainAuthPrivateKey && cookieKeys) {
    return { oidcPrivateKey, mainAuthPrivateKey, cookieKeys };
  }
  const file = path.join(config.dataDir, developmentSecretsFile);
  const stored = await readStoredSecrets(file);
  const generated: string[] = [];
  const take = <T>(name: string, configured: T | undefined, kept: T | undefined, make: () => T): T => {
    if (configured !== undefined) return configured;
    if (kept !== undefined) return kept;
    generated.push(name);
    return make();
  };
  const secrets: Secrets = {
    oidcPrivateKey: take('OIDC_PRIVATE_KEY', oidcPrivateKey, stored.oidcPrivateKey, generateRsaPrivateKeyPem),
    mainAuthPrivateKey: take(
      'MAIN_AUTH_PRIVATE_KEY',
      mainAuthPrivateKey,
      stored.mainAuthPrivateKey,
      generateRsaPrivateKeyPem,
    ),
    cookieKeys: take('COOKIE_KEYS', cookieKeys, stored.cookieKeys, () => [
      crypto.randomBytes(32).toString('base64url'),
    ]),
  };
  if (generated.length > 0) {
    await fs.mkdir(config.dataDir, { recursive: true });
    const toStore = {
      ...stored,
      ...(oidcPrivateKey ? {} : { oidcPrivateKey: secrets.oidcPrivateKey }),
      ...(mainAuthPrivateKey ? {} : { mainAuthPrivateKey: secrets.mainAuthPrivateKey }),
      ...(cookieKeys ? {} : { cookieKeys: secrets.cookieKeys }),
    };
    await fs.writeFile(file, JSON.stringify(toStore, null, 2), { mode: 0o600 });
  }
  const fromFile = [
    ['OIDC_PRIVATE_KEY', oidcPrivateKey],
    ['MAIN_AUTH_PRIVATE_KEY', mainAuthPrivateKey],
    ['COOKIE_KEYS', cookieKeys],
  ]
    .filter(([, configured]) => configured === undefined)
    .map(([name]) => name);
  logger.warn(
    { file, generated, variables: fromFile },
    `${fromFile.join(', ')} not set: using development secrets from ${file}. Set them in production.`,
  );
  return secrets;
}

async function readStoredSecrets(file: string): Promise<z.infer<typeof storedSecretsSchema>> {
  try {
    return storedSecretsSchema.parse(JSON.parse(await fs.readFile(file, 'utf8')));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new Error(`${file} is unreadable (${(error as Error).message}); delete it to regenerate`);
  }
}
