import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Database } from '../db/database.js';
import { tooManyRequests } from './api-error.js';

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
 * ($3 may appear twice). On PostgreSQL the library gets a few connections of its own, used in turn,
 * and sends named prepared statements: one upsert per request, planned once per connection, without
 * the query builder's or a pool's work on this hot path (pg queues queries per connection).
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
 * Connections of the PostgreSQL store. Each carries one query at a time; under load the requests of a
 * node queue on them, so a few in turn keep the wait short (4 measured best on the 2-core bench machine).
 */
const rateLimitConnections = 4;

/**
 * The service's rate limits, on rate-limiter-flexible with its PostgreSQL store: one atomic upsert per
 * request, so the budget is shared by every node on the database and holds under parallel requests.
 */
export class RateLimits {
  readonly #limiters = new Map<string, RateLimiterAbstract>();
  readonly #store: { storeClient: unknown; storeType: 'client' };
  readonly #connections: Promise<pg.Client>[] = [];

  constructor(db: Database) {
    const config = db.client.config as { client?: unknown; connection?: { connectionString?: string } };
    const connectionString = config.client === 'pg' ? config.connection?.connectionString : undefined;
    if (connectionString) {
      this.#store = { storeClient: this.#postgresStore(connectionString), storeType: 'client' };
    } else {
      this.#store = { storeClient: pgliteStore(db), storeType: 'client' };
    }
  }

  #postgresStore(connectionString: string) {
    const busy: number[] = [];
    const connect = (index: number): Promise<pg.Client> => {
      const client = new pg.Client({ connectionString, application_name: 'identity-service-rate-limits' });
      // A broken connection is replaced at the next query.
      client.on('error', () => {
        this.#connections[index] = connect(index);
      });
      return client.connect().then(() => client);
    };
    // Opened as load needs them: an idle connection is used first, a new one is opened only while all
    // are busy, so a quiet node (or a test) holds one connection rather than the maximum.
    const pick = (): number => {
      const idle = busy.findIndex((queries) => queries === 0);
      if (idle >= 0) return idle;
      if (this.#connections.length < rateLimitConnections) {
        this.#connections.push(connect(this.#connections.length));
        busy.push(0);
        return this.#connections.length - 1;
      }
      return busy.indexOf(Math.min(...busy));
    };
    return {
      query: async (query: pg.QueryConfig) => {
        const index = pick();
        busy[index]! += 1;
        try {
          return await (await this.#connections[index]!).query(query);
        } finally {
          busy[index]! -= 1;
        }
      },
    };
  }

  async close(): Promise<void> {
    await Promise.all(
      this.#connections.map(async (connection) => (await connection.catch(() => undefined))?.end()),
    );
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
