import { RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Database } from '../db/database.js';
import { tooManyRequests } from './api-error.js';
import { PostgresRateLimitStore } from './rate-limit-postgres-store.js';

/** A limit: `points` requests per `durationSeconds` window for one key. */
export interface RateLimitRule {
  /** Distinguishes the counters of different limits in the shared table. */
  name: string;
  points: number;
  durationSeconds: number;
  /** Once exceeded, refuse for this long instead of until the window ends. */
  blockDurationSeconds?: number;
}

export class RateLimitExceeded extends Error {
  override name = 'RateLimitExceeded';
  constructor(
    readonly rule: RateLimitRule,
    readonly retryAfterSeconds: number,
  ) {
    super(`rate limit ${rule.name} exceeded; retry after ${retryAfterSeconds} s`);
  }

  /** The identity API's 429: JSON body with retryAfterSeconds, and Retry-After. */
  toApiError() {
    return tooManyRequests(this.retryAfterSeconds);
  }
}

/**
 * On PGlite, rate-limiter-flexible's `{ text, values }` queries run through knex, so they take their
 * turn on PGlite's single connection like every other query. Placeholders become knex named bindings
 * ($3 may appear twice). On PostgreSQL the library gets PostgresRateLimitStore: connections of its
 * own and group commit of the counters (rate-limit-postgres-store.ts).
 */
function pgliteStore(db: Database) {
  return {
    async query(query: { text: string; values?: unknown[] }) {
      const bindings: Record<string, unknown> = {};
      (query.values ?? []).forEach((value, index) => {
        bindings[`v${index + 1}`] = value;
      });
      const text = query.text.replace(/\$(\d+)/g, (_match, position: string) => `:v${position}`);
      const result = (await db.raw(text, bindings)) as { rows: unknown[]; rowCount?: number | null };
      return { rows: result.rows, rowCount: result.rowCount ?? result.rows.length };
    },
  };
}

/**
 * The service's rate limits, on rate-limiter-flexible with its PostgreSQL store: each request's counter
 * is one atomic row update in the database, so the budget is shared by every node on the database and
 * holds under parallel requests.
 */
export class RateLimits {
  readonly #limiters = new Map<string, RateLimiterAbstract>();
  readonly #store: { storeClient: unknown; storeType: 'client' };
  readonly #postgresStore: PostgresRateLimitStore | undefined;

  constructor(db: Database) {
    const config = db.client.config as { client?: unknown; connection?: { connectionString?: string } };
    const connectionString = config.client === 'pg' ? config.connection?.connectionString : undefined;
    if (connectionString) {
      this.#postgresStore = new PostgresRateLimitStore(connectionString);
      this.#store = { storeClient: this.#postgresStore, storeType: 'client' };
    } else {
      this.#store = { storeClient: pgliteStore(db), storeType: 'client' };
    }
  }

  async close(): Promise<void> {
    await this.#postgresStore?.close();
  }

  #limiter(rule: RateLimitRule): RateLimiterAbstract {
    let limiter = this.#limiters.get(rule.name);
    if (!limiter) {
      limiter = new RateLimiterPostgres({
        ...this.#store,
        tableName: 'rate_limits',
        tableCreated: true,
        clearExpiredByTimeout: false,
        keyPrefix: rule.name,
        points: rule.points,
        duration: rule.durationSeconds,
        blockDuration: rule.blockDurationSeconds ?? 0,
      });
      this.#limiters.set(rule.name, limiter);
    }
    return limiter;
  }

  /** Counts one request for `key`; throws RateLimitExceeded when the budget is spent. */
  async consume(rule: RateLimitRule, key: string, points = 1): Promise<void> {
    try {
      await this.#limiter(rule).consume(key, points);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        throw new RateLimitExceeded(rule, Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      }
      throw rejection;
    }
  }

  /** Forgets the counter of `key` (e.g. after a successful login). */
  async reset(rule: RateLimitRule, key: string): Promise<void> {
    await this.#limiter(rule).delete(key);
  }
}
