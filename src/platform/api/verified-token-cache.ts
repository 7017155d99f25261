import { decodeJwt } from 'jose';
import type { Principal } from '../../tokens/principal.js';

/**
 * Remembers access tokens that passed verification, until they expire, so a client repeating the same
 * token (a domain service polling the reference data) costs one RSA verification, not one per request.
 * Safe because our access tokens are self-contained JWTs: nothing revokes one before its exp, and the
 * key that signed it stays published for 24 hours after a rotation, longer than any token lives.
 * Failures are never remembered. Bounded: the oldest entries leave first.
 */
export class VerifiedTokenCache {
  readonly #entries = new Map<string, { principal: Principal; expiresAtMs: number }>();

  constructor(private readonly maxEntries = 10_000) {}

  get(token: string): Principal | undefined {
    const entry = this.#entries.get(token);
    if (!entry) return undefined;
    if (Date.now() >= entry.expiresAtMs) {
      this.#entries.delete(token);
      return undefined;
    }
    return entry.principal;
  }

  set(token: string, principal: Principal): void {
    const { exp } = decodeJwt(token);
    if (typeof exp !== 'number') return;
    if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(token, { principal, expiresAtMs: exp * 1000 });
  }
}
