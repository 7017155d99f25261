import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/database.js';
import { PostgresRateLimitStore } from '../../src/http/rate-limit-postgres-store.js';
import { createTestDatabase } from '../support/database.js';

// PostgreSQL only (this file runs when DATABASE_URL is set): the store that batches counters.
let database: DatabaseHandle & { url?: string };
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

/** The statement rate-limiter-flexible sends for one consume(), as the store receives it. */
function consume(store: PostgresRateLimitStore, key: string) {
  return store.query({
    name: 'rate_limits:rlflx-upsert',
    text: 'unused: the store batches these',
    values: [key, 1, Date.now() + 60_000, Date.now()],
  }) as Promise<{ rows: { points: number }[] }>;
}

describe("the rate limiter's batching store on PostgreSQL", () => {
  it('a counter the database refuses fails alone: the others of its statement are counted', async () => {
    const store = new PostgresRateLimitStore({ connectionString: database.url! });
    try {
      const prefix = `isolation-${crypto.randomBytes(4).toString('hex')}`;
      const good = Array.from({ length: 6 }, (_, index) => `${prefix}:${index}`);
      // Longer than the key column: the database refuses the row (on main, the whole batch failed).
      const bad = `${prefix}:${'x'.repeat(300)}`;
      // Sent in one turn of the event loop: they travel in one statement.
      const results = await Promise.allSettled(
        [...good.slice(0, 3), bad, ...good.slice(3)].map((key) => consume(store, key)),
      );
      const refused = results.filter((result) => result.status === 'rejected');
      expect(refused).toHaveLength(1);
      expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ code: '22001' });
      expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(6);
      const counted = await database.db('rate_limits').where('key', 'like', `${prefix}:%`).pluck('points');
      expect(counted).toEqual([1, 1, 1, 1, 1, 1]);
      // The store keeps working: the next statement counts as before.
      await expect(consume(store, good[0]!)).resolves.toMatchObject({ rows: [{ points: 2 }] });
    } finally {
      await store.close();
    }
  });

  it('a database it cannot reach fails every waiting counter with the driver error itself', async () => {
    const url = new URL(database.url!);
    url.pathname = `/idp_missing_${crypto.randomBytes(4).toString('hex')}`;
    const store = new PostgresRateLimitStore({ connectionString: url.toString() });
    try {
      const results = await Promise.allSettled(['a', 'b', 'c'].map((key) => consume(store, key)));
      expect(results.every((result) => result.status === 'rejected')).toBe(true);
      for (const result of results as PromiseRejectedResult[]) {
        // Not wrapped nor reworded: whoever classifies "database unavailable" sees the pg error.
        expect(result.reason).toMatchObject({ code: '3D000', severity: 'FATAL' });
      }
    } finally {
      await store.close();
    }
  });
});
