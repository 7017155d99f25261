import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import type { Logger } from '../logger.js';
import { onGrantsRevoked, revokedGrantsSince, type RevokedGrant } from './models/revoked-grant.js';

/**
 * How often a node asks the database which grants were revoked since its last look (on another node
 * or worker): a revocation made elsewhere takes effect here within this time. One made through this
 * process takes effect at once.
 */
export const revokedGrantsPollMs = 5_000;
/** Revocations are looked for this far before the previous look: a transaction may commit after its recorded_at. */
const feedOverlapMs = 10_000;

/**
 * The grants revoked in the last access-token lifetime, in memory: introspection, userinfo and the
 * bearer-token checks ask it for every OAuth user token without touching the database. The list is
 * short (only what was revoked in the last ~16 minutes) and is never capped: forgetting a revocation
 * early would let its tokens back in.
 */
export class RevokedGrants {
  readonly #until = new Map<string, number>();
  #lastLook: Date | undefined;
  #looking: Promise<void> | undefined;
  #poll: NodeJS.Timeout | undefined;
  #stopListening: (() => void) | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Reads every revocation still in force, then follows the feed. Resolves once the first read is done. */
  async start(): Promise<void> {
    this.#stopListening = onGrantsRevoked((revoked) => this.#remember(revoked));
    await this.#look();
    this.#poll = setInterval(() => void this.#lookLogged(), revokedGrantsPollMs);
    this.#poll.unref();
  }

  isRevoked(grantId: string): boolean {
    const until = this.#until.get(grantId);
    if (until === undefined) return false;
    if (until > this.clock.now().getTime()) return true;
    this.#until.delete(grantId);
    return false;
  }

  close(): void {
    clearInterval(this.#poll);
    this.#stopListening?.();
  }

  #remember(revoked: RevokedGrant[]): void {
    for (const { grantId, expiresAt } of revoked) {
      this.#until.set(grantId, Math.max(this.#until.get(grantId) ?? 0, expiresAt.getTime()));
    }
  }

  async #look(): Promise<void> {
    // The first look reads everything still in force; later ones what was recorded since the last.
    const since = this.#lastLook ? new Date(this.#lastLook.getTime() - feedOverlapMs) : new Date(0);
    const now = this.clock.now();
    const { lookedAt, revoked } = await revokedGrantsSince(this.db, since, now);
    this.#remember(revoked);
    for (const [grantId, until] of this.#until) if (until <= now.getTime()) this.#until.delete(grantId);
    this.#lastLook = lookedAt;
  }

  #lookLogged(): Promise<void> {
    this.#looking ??= this.#look()
      .catch((error: unknown) => {
        // Nothing learnt this time; the next look covers the same revocations (it starts further back).
        this.logger.warn({ err: error }, 'could not read which OAuth grants were revoked');
      })
      .finally(() => {
        this.#looking = undefined;
      });
    return this.#looking;
  }
}
