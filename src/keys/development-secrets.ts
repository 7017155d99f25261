import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
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

/** The same on libuv's thread pool: a first start makes two keys side by side, beside the database's start. */
export async function generateRsaPrivateKeyPemInBackground(): Promise<string> {
  const { privateKey } = await promisify(crypto.generateKeyPair)('rsa', { modulusLength: 2048 });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/**
 * Returns the configured secrets. Outside production, a secret that is not configured is generated
 * once into DATA_DIR/development-secrets.json (mode 0600) and reused at the next start, with a warning:
 * such keys are fine on a laptop and wrong anywhere else. (loadConfig already refuses production
 * without them.) Without DATA_DIR (a library's default) they are generated in memory, written nowhere.
 */
export async function resolveSecrets(config: Config, logger: Logger): Promise<Secrets> {
  const { oidcPrivateKey, mainAuthPrivateKey, cookieKeys } = config;
  if (oidcPrivateKey && mainAuthPrivateKey && cookieKeys) {
    return { oidcPrivateKey, mainAuthPrivateKey, cookieKeys };
  }
  const { dataDir } = config;
  const file = dataDir === undefined ? undefined : path.join(dataDir, developmentSecretsFile);
  const stored = file === undefined ? {} : await readStoredSecrets(file);
  const generated: string[] = [];
  const take = async <T>(
    name: string,
    configured: T | undefined,
    kept: T | undefined,
    make: () => Promise<T>,
  ): Promise<T> => {
    if (configured !== undefined) return configured;
    if (kept !== undefined) return kept;
    generated.push(name);
    return make();
  };
  const [oidcKey, mainAuthKey, cookieKeyList] = await Promise.all([
    take('OIDC_PRIVATE_KEY', oidcPrivateKey, stored.oidcPrivateKey, generateRsaPrivateKeyPemInBackground),
    take(
      'MAIN_AUTH_PRIVATE_KEY',
      mainAuthPrivateKey,
      stored.mainAuthPrivateKey,
      generateRsaPrivateKeyPemInBackground,
    ),
    take('COOKIE_KEYS', cookieKeys, stored.cookieKeys, async () => [
      crypto.randomBytes(32).toString('base64url'),
    ]),
  ]);
  const secrets: Secrets = {
    oidcPrivateKey: oidcKey,
    mainAuthPrivateKey: mainAuthKey,
    cookieKeys: cookieKeyList,
  };
  if (generated.length > 0 && dataDir !== undefined && file !== undefined) {
    await fs.mkdir(dataDir, { recursive: true });
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
    file === undefined
      ? `${fromFile.join(', ')} not set: using development secrets generated in memory (no DATA_DIR). Set them in production.`
      : `${fromFile.join(', ')} not set: using development secrets from ${file}. Set them in production.`,
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
