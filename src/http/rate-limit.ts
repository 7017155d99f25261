import type pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { sha256 } from '../crypto/digest.js';
import type { Database } from '../db/database.js';
import { tooManyRequests } from './api-error.js';
import { PostgresRateLimitStore } from './rate-limit-postgres-store.js';
import { currentRequest } from './request-context.js';

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
      // PGlite reports no rowCount for a SELECT; the library reads it to tell "no counter".
      return { rows: result.rows, rowCount: Math.max(result.rowCount ?? 0, result.rows.length) };
    },
  };
}

/**
 * The key a counter is stored under: a digest of what the caller passed (43 characters), so nothing a
 * request puts into a key (a long identifier, a forged header) can exceed the table's key column or
 * make one counter's statement fail.
 */
function counterKey(key: string): string {
  return sha256(key);
}

/**
 * The service's rate limits, on rate-limiter-flexible with its PostgreSQL store: each request's counter
 * is one atomic row update in the database, so the budget is shared by every node on the database and
 * holds under parallel requests. Keys are stored as digests (`counterKey`): callers may pass any string.
 */
export class RateLimits {
  readonly #limiters = new Map<string, RateLimiterAbstract>();
  readonly #store: { storeClient: unknown; storeType: 'client' };
  readonly #postgresStore: PostgresRateLimitStore | undefined;
  readonly #overrides: Readonly<Record<string, Omit<RateLimitRule, 'name'>>>;

  /** `overrides`: points and windows by rule name, instead of the rules' own (a service's settings). */
  constructor(db: Database, overrides: Readonly<Record<string, Omit<RateLimitRule, 'name'>>> = {}) {
    this.#overrides = overrides;
    const config = db.client.config as { client?: unknown; connection?: pg.ClientConfig };
    // The store's own connections get the same settings as the pool's (timeouts, keep-alive).
    const connection = config.client === 'pg' ? config.connection : undefined;
    if (connection?.connectionString) {
      this.#postgresStore = new PostgresRateLimitStore(connection);
      this.#store = { storeClient: this.#postgresStore, storeType: 'client' };
    } else {
      this.#store = { storeClient: pgliteStore(db), storeType: 'client' };
    }
  }

  async close(): Promise<void> {
    await this.#postgresStore?.close();
  }

  /** The rule as this service applies it. */
  effective(rule: RateLimitRule): RateLimitRule {
    const override = this.#overrides[rule.name];
    return override ? { ...override, name: rule.name } : rule;
  }

  #limiter(given: RateLimitRule): RateLimiterAbstract {
    let limiter = this.#limiters.get(given.name);
    if (!limiter) {
      const rule = this.effective(given);
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
      await this.#limiter(rule).consume(counterKey(key), points);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) throw exceeded(rule, rejection);
      throw rejection;
    }
  }

  /**
   * Gives back `points` a `consume` counted for `key`: for requests that count only once their
   * outcome is known, consumed ahead (so parallel ones can't overshoot the budget: each holds its
   * point while it runs) and given back when they turn out not to count.
   */
  async giveBack(rule: RateLimitRule, key: string, points = 1): Promise<void> {
    await this.#limiter(rule).reward(counterKey(key), points);
  }

  /** Forgets the counter of `key` (e.g. after a successful login). */
  async reset(rule: RateLimitRule, key: string): Promise<void> {
    await this.#limiter(rule).delete(counterKey(key));
  }
}

function exceeded(rule: RateLimitRule, counter: RateLimiterRes): RateLimitExceeded {
  currentRequest()?.observers.rateLimited?.(rule.name);
  return new RateLimitExceeded(rule, Math.max(1, Math.ceil(counter.msBeforeNext / 1000)));
}
