import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import { isUuid } from '../identity/uuid.js';

/**
 * Whether a user exists and is active, remembered for a few seconds per node. Introspection asks it
 * for every user token; a disabled user's tokens turn inactive within `ttlMs` everywhere.
 */
export class ActiveUserCache {
  readonly #entries = new Map<string, { active: boolean; until: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly ttlMs = 5_000,
  ) {}

  async isActive(userId: string): Promise<boolean> {
    const cached = this.#entries.get(userId);
    if (cached && cached.until > this.clock.now().getTime()) return cached.active;
    const row: { status: string } | undefined = isUuid(userId)
      ? await this.db('users').where({ id: userId }).first('status')
      : undefined;
    const active = row?.status === 'active';
    if (this.#entries.size > 50_000) this.#entries.clear();
    this.#entries.set(userId, { active, until: this.clock.now().getTime() + this.ttlMs });
    return active;
  }
}
