import crypto from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { Queryable } from '../db/database.js';

/**
 * The service signs with two RSA keys: `oidc` (id tokens, OAuth access tokens) and `main-auth` (the
 * service's own sign-in tokens). Keeping them apart is what makes a main-auth token unusable as an
 * OAuth token and the reverse: each verifier only trusts the kids of its purpose.
 */
export type KeyPurpose = 'oidc' | 'main-auth';

export interface SigningKey {
  kid: string;
  purpose: KeyPurpose;
  privateKey: crypto.KeyObject;
  /** Private JWK with kid, alg and use (the engine's `jwks` configuration takes this form). */
  privateJwk: JWK;
  publicJwk: JWK;
}

export const signingAlgorithm = 'RS256';
/** How long a replaced key stays published, so tokens it signed keep verifying (spec: Limits). */
export const retiredKeyPublishedForMs = 24 * 60 * 60 * 1000;

export async function signingKeyFromPem(pem: string, purpose: KeyPurpose): Promise<SigningKey> {
  let privateKey: crypto.KeyObject;
  try {
    privateKey = crypto.createPrivateKey(pem);
  } catch (error) {
    throw new Error(
      `the ${purpose} signing key is not a readable PEM private key: ${(error as Error).message}`,
    );
  }
  if (privateKey.asymmetricKeyType !== 'rsa') {
    throw new Error(`the ${purpose} signing key must be an RSA key (got ${privateKey.asymmetricKeyType})`);
  }
  const bits = privateKey.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < 2048) {
    throw new Error(`the ${purpose} signing key must have at least 2048 bits (got ${bits})`);
  }
  const exported = privateKey.export({ format: 'jwk' }) as JWK;
  const publicJwk: JWK = { kty: 'RSA', n: exported.n!, e: exported.e! };
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
  const labels = { kid, alg: signingAlgorithm, use: 'sig' };
  return {
    kid,
    purpose,
    privateKey,
    privateJwk: { ...exported, ...labels },
    publicJwk: { ...publicJwk, ...labels },
  };
}

interface SigningKeyRow {
  kid: string;
  purpose: KeyPurpose;
  public_jwk: JWK;
  activated_at: Date;
  retired_at: Date | null;
}

/**
 * Records the keys this node signs with as the active ones and retires any other active key of the
 * same purpose (a new key given at restart). Runs in one transaction, so nodes starting together agree.
 */
export async function activateSigningKeys(db: Queryable, keys: SigningKey[], now: Date): Promise<void> {
  for (const key of keys) {
    await db('signing_keys')
      .insert({
        kid: key.kid,
        purpose: key.purpose,
        public_jwk: JSON.stringify(key.publicJwk),
        activated_at: now,
        retired_at: null,
      })
      .onConflict('kid')
      .merge({ retired_at: null });
    await db('signing_keys')
      .where({ purpose: key.purpose })
      .whereNot({ kid: key.kid })
      .whereNull('retired_at')
      .update({ retired_at: now });
  }
}

export interface PublishedKey {
  kid: string;
  purpose: KeyPurpose;
  publicJwk: JWK;
}

/** Active keys of both purposes plus keys retired less than 24 hours ago; the JWKS of every node. */
export async function findPublishedKeys(db: Queryable, now: Date): Promise<PublishedKey[]> {
  const rows: SigningKeyRow[] = await db('signing_keys')
    .where((query) =>
      query
        .whereNull('retired_at')
        .orWhere('retired_at', '>', new Date(now.getTime() - retiredKeyPublishedForMs)),
    )
    .orderBy([{ column: 'retired_at', order: 'asc', nulls: 'first' }, 'activated_at']);
  return rows.map((row) => ({ kid: row.kid, purpose: row.purpose, publicJwk: row.public_jwk }));
}
