import { decodeJwt } from 'jose';
import type { Clock } from '../clock.js';

/**
 * Remembers access tokens that passed verification, until they expire, so a client repeating the same
 * token (a domain service polling the reference data, a resource server introspecting the bearer token
 * of each call it serves) costs one RSA verification, not one per request. Safe because a signature
 * stays valid until exp (the key that signed it stays published for 24 hours after a rotation, longer
 * than any token lives). What can change meanwhile (the grant revoked, the client or the user disabled)
 * is checked by the caller at every use. Failures are never remembered. Bounded: the oldest entries
 * leave first.
 */
export class VerifiedTokenCache<Verified> {
  readonly #entries = new Map<string, { verified: Verified; expiresAtMs: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxEntries = 10_000,
  ) {}

  get(token: string): Verified | undefined {
    const entry = this.#entries.get(token);
    if (!entry) return undefined;
    if (this.clock.now().getTime() >= entry.expiresAtMs) {
      this.#entries.delete(token);
      return undefined;
    }
    return entry.verified;
  }

  set(token: string, verified: Verified): void {
    const { exp } = decodeJwt(token);
    if (typeof exp !== 'number') return;
    if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(token, { verified, expiresAtMs: exp * 1000 });
  }
}
