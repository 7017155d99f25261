import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { PublishedKeySet } from './published-key-set.js';
import { activateSigningKeys, signingKeyFromPem, type SigningKey } from './signing-keys.js';

export interface ServiceKeys {
  oidc: SigningKey;
  mainAuth: SigningKey;
  published: PublishedKeySet;
}

/**
 * The service's two signing keys from their PEMs, made current in the database and published in the
 * key set every verifier reads (a replaced key stays published a while, signing-keys.ts).
 */
export async function activateServiceKeys(
  deps: { db: Database; clock: Clock },
  pems: { oidcPrivateKey: string; mainAuthPrivateKey: string },
): Promise<ServiceKeys> {
  const { db, clock } = deps;
  const oidc = await signingKeyFromPem(pems.oidcPrivateKey, 'oidc');
  const mainAuth = await signingKeyFromPem(pems.mainAuthPrivateKey, 'main-auth');
  if (oidc.kid === mainAuth.kid) {
    throw new Error('MAIN_AUTH_PRIVATE_KEY must be a different key from OIDC_PRIVATE_KEY');
  }
  await db.transaction((trx) => activateSigningKeys(trx, [oidc, mainAuth], clock.now()));
  const published = new PublishedKeySet(db, clock);
  await published.refresh();
  return { oidc, mainAuth, published };
}
