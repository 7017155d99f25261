import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import { onUserStatusChanged } from '../identity/users/user-status-changes.js';
import { isUuid } from '../identity/uuid.js';

/**
 * Whether a user exists and is active, remembered for a few seconds per node. Every check of a user's
 * OAuth token asks it (introspection, userinfo, every bearer-token API through confirmStanding); a
 * user disabled on another node is refused everywhere within `ttlMs`, one disabled through this
 * process at once.
 */
export class ActiveUserCache {
  readonly #entries = new Map<string, { active: boolean; until: number }>();
  readonly #stopListening: () => void;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly ttlMs = 5_000,
  ) {
    this.#stopListening = onUserStatusChanged((userId, status) => {
      // A disable counts at once; an enable is read again at the next check (after the commit).
      if (status === 'active') this.#entries.delete(userId);
      else this.#entries.set(userId, { active: false, until: this.clock.now().getTime() + this.ttlMs });
    });
  }

  async isActive(userId: string): Promise<boolean> {
    const cached = this.#entries.get(userId);
    if (cached && cached.until > this.clock.now().getTime()) return cached.active;
    const row: { status: string } | undefined = isUuid(userId)
      ? await this.db('users').where({ id: userId }).first('status')
      : undefined;
    const active = row?.status === 'active';
    // A disable announced while this read was on its way wins over what the read saw.
    const announced = this.#entries.get(userId);
    if (announced && !announced.active && announced.until > this.clock.now().getTime()) return false;
    if (this.#entries.size > 50_000) this.#entries.clear();
    this.#entries.set(userId, { active, until: this.clock.now().getTime() + this.ttlMs });
    return active;
  }

  close(): void {
    this.#stopListening();
  }
}
