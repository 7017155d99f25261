import { importJWK, type JWK, type JWTHeaderParameters, type KeyObject } from 'jose';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import { keyPurposeMember } from './published-key-purpose.js';
import { findPublishedKeys, signingAlgorithm, type KeyPurpose, type PublishedKey } from './signing-keys.js';

const refreshEveryMs = 60_000;
/** A token with a kid we don't know makes us re-read the table, at most this often (another node rotated). */
const unknownKidRefreshEveryMs = 5_000;

/**
 * The key set every node publishes at /.well-known/jwks.json, read from the signing_keys table and
 * cached briefly. It also verifies our own tokens: a verifier only trusts the kids of one purpose.
 */
export class PublishedKeySet {
  #keys: PublishedKey[] = [];
  #imported = new Map<string, Promise<KeyObject | Uint8Array>>();
  #loadedAt = -Infinity;
  #loading: Promise<void> | undefined;
  #jwksBody: string | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
  ) {}

  async refresh(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        this.#keys = await findPublishedKeys(this.db, this.clock.now());
        this.#jwksBody = JSON.stringify({
          keys: this.#keys.map((key) => ({ ...key.publicJwk, [keyPurposeMember]: key.purpose })),
        });
        this.#loadedAt = this.clock.now().getTime();
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  async #fresh(maxAgeMs: number): Promise<PublishedKey[]> {
    if (this.clock.now().getTime() - this.#loadedAt > maxAgeMs) await this.refresh();
    return this.#keys;
  }

  /** The JWKS document as a JSON string (served as is, many thousand times a second). */
  async jwksJson(): Promise<string> {
    await this.#fresh(refreshEveryMs);
    return this.#jwksBody!;
  }

  async keys(): Promise<PublishedKey[]> {
    return this.#fresh(refreshEveryMs);
  }

  /** A key-resolver for jose's jwtVerify that accepts only RS256 keys of the given purpose. */
  resolverFor(purpose: KeyPurpose) {
    return async (header: JWTHeaderParameters): Promise<KeyObject | Uint8Array> => {
      if (header.alg !== signingAlgorithm || typeof header.kid !== 'string') {
        throw new UntrustedKeyError('unsupported alg or missing kid');
      }
      let key = (await this.#fresh(refreshEveryMs)).find((candidate) => candidate.kid === header.kid);
      if (!key) {
        key = (await this.#fresh(unknownKidRefreshEveryMs)).find((candidate) => candidate.kid === header.kid);
      }
      if (!key || key.purpose !== purpose) throw new UntrustedKeyError('unknown kid');
      let imported = this.#imported.get(key.kid);
      if (!imported) {
        imported = importJWK(key.publicJwk as JWK, signingAlgorithm) as Promise<KeyObject | Uint8Array>;
        this.#imported.set(key.kid, imported);
      }
      return imported;
    };
  }
}

export class UntrustedKeyError extends Error {
  override name = 'UntrustedKeyError';
}
