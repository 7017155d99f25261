import type { Clock } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import type { MainAuthSessionStanding } from '../../tokens/principal.js';
import { isUuid } from '../uuid.js';
import { onSessionsEnded } from './session-ends.js';
import { idleCutoff, type SessionPolicy } from './session-policy.js';

/**
 * How long a session revoked through this process is refused here without asking the database: longer
 * than the revoking transaction takes to commit. Should it fail instead, the session's tokens are
 * refused on this node a little early, never accepted late.
 */
const announcedEndRememberedMs = 60_000;

/**
 * Whether a main-auth access token's session is live (not logged out, revoked, expired or idle) and
 * its user active, remembered `ttlMs` per node: every bearer-token API asks it for every main-auth
 * token (confirmStanding), so one token costs one indexed read per few seconds, not one per request.
 * A session revoked through this process is refused here at once; one revoked on another node within
 * `ttlMs`.
 */
export class LiveSessionCache implements MainAuthSessionStanding {
  readonly #entries = new Map<string, { userId: string | undefined; live: boolean; until: number }>();
  readonly #stopListening: () => void;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly policy: SessionPolicy,
    private readonly ttlMs = 5_000,
  ) {
    this.#stopListening = onSessionsEnded((sessionIds) => {
      const until = this.clock.now().getTime() + announcedEndRememberedMs;
      for (const id of sessionIds) this.#entries.set(id, { userId: undefined, live: false, until });
    });
  }

  async isLive(token: { sessionId: string; userId: string }): Promise<boolean> {
    const cached = this.#fresh(token.sessionId);
    if (cached) return cached.live && cached.userId === token.userId;
    const now = this.clock.now();
    const row: { user_id: string } | undefined = isUuid(token.sessionId)
      ? await this.db('sessions')
          .join('users', 'users.id', 'sessions.user_id')
          .where({ 'sessions.id': token.sessionId, 'sessions.is_revoked': false, 'users.status': 'active' })
          .where('sessions.expires_at', '>', now)
          .where('sessions.last_activity_at', '>', idleCutoff(this.policy, now))
          .first('sessions.user_id')
      : undefined;
    // An end announced while this read was on its way wins over what the read saw.
    if (this.#fresh(token.sessionId)?.live === false) return false;
    if (this.#entries.size > 50_000) this.#entries.clear();
    this.#entries.set(token.sessionId, {
      userId: row?.user_id,
      live: row !== undefined,
      until: this.clock.now().getTime() + this.ttlMs,
    });
    return row?.user_id === token.userId;
  }

  close(): void {
    this.#stopListening();
  }

  #fresh(sessionId: string) {
    const entry = this.#entries.get(sessionId);
    return entry && entry.until > this.clock.now().getTime() ? entry : undefined;
  }
}
