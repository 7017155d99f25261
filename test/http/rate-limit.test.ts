import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/database.js';
import { RateLimitExceeded, RateLimits } from '../../src/http/rate-limit.js';
import { createTestDatabase } from '../support/database.js';

let database: DatabaseHandle;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

describe('rate limits on the shared database store', () => {
  it('grants exactly the budget to parallel requests, across two limiter instances (two nodes)', async () => {
    const rule = { name: 'test-parallel', points: 20, durationSeconds: 60 };
    const nodes = [new RateLimits(database.db), new RateLimits(database.db)];
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, index) => nodes[index % 2]!.consume(rule, 'client-a')),
    );
    const granted = results.filter((result) => result.status === 'fulfilled').length;
    const refused = results.filter(
      (result) => result.status === 'rejected' && result.reason instanceof RateLimitExceeded,
    );
    expect(granted).toBe(20);
    expect(refused).toHaveLength(30);
    const retryAfter = (refused[0] as PromiseRejectedResult).reason.retryAfterSeconds;
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Another key has its own budget.
    await expect(nodes[0]!.consume(rule, 'client-b')).resolves.toBeUndefined();
    await Promise.all(nodes.map((node) => node.close()));
  });

  it('counts every key exactly when many keys are consumed at once, on two nodes', async () => {
    // Requests arriving together share one statement per node (group commit); each must still get
    // its own answer and no count may be lost.
    const rule = { name: 'test-many-keys', points: 5, durationSeconds: 60 };
    const nodes = [new RateLimits(database.db), new RateLimits(database.db)];
    const keys = Array.from({ length: 12 }, (_, index) => `client-${index}`);
    const attempts = keys.flatMap((key) => Array.from({ length: 8 }, () => key));
    const results = await Promise.allSettled(
      attempts.map((key, index) => nodes[index % 2]!.consume(rule, key).then(() => key)),
    );
    for (const key of keys) {
      const granted = results.filter((result) => result.status === 'fulfilled' && result.value === key);
      expect(granted, key).toHaveLength(5);
    }
    const rejections = results.filter((result) => result.status === 'rejected');
    expect(rejections.every((result) => result.reason instanceof RateLimitExceeded)).toBe(true);
    const counters = await database.db('rate_limits').where('key', 'like', 'test-many-keys:%');
    expect(counters).toHaveLength(12);
    expect(counters.every((counter: { points: number }) => counter.points === 8)).toBe(true);
    // A reset (a statement of another kind) goes through while counters are being consumed.
    await Promise.all([
      nodes[0]!.reset(rule, 'client-0'),
      nodes[0]!.consume(rule, 'client-1').catch(() => {}),
    ]);
    await expect(nodes[1]!.consume(rule, 'client-0')).resolves.toBeUndefined();
    await Promise.all(nodes.map((node) => node.close()));
  });

  it('counts a key of any length: what a request puts into a key never exceeds the key column', async () => {
    // An identifier of the maximum length beside an IP, a header of any size: all must count, none fail.
    const rule = { name: 'test-long-keys', points: 2, durationSeconds: 60 };
    const limits = new RateLimits(database.db);
    const long = `203.0.113.7:${'a'.repeat(5000)}@example.com`;
    await limits.consume(rule, long);
    await limits.consume(rule, long);
    await expect(limits.consume(rule, long)).rejects.toBeInstanceOf(RateLimitExceeded);
    // A key that differs only at its end is another counter.
    await expect(limits.consume(rule, `${long}.`)).resolves.toBeUndefined();
    const keys = await database.db('rate_limits').where('key', 'like', 'test-long-keys:%').pluck('key');
    expect(keys).toHaveLength(2);
    expect(keys.every((key: string) => key.length <= 64)).toBe(true);
    await limits.reset(rule, long);
    await expect(limits.consume(rule, long)).resolves.toBeUndefined();
    await limits.close();
  });

  it('giveBack returns a consumed point: the budget is there again', async () => {
    const rule = { name: 'test-give-back', points: 2, durationSeconds: 60 };
    const limits = new RateLimits(database.db);
    await limits.consume(rule, 'k');
    await limits.consume(rule, 'k');
    await limits.giveBack(rule, 'k');
    await expect(limits.consume(rule, 'k')).resolves.toBeUndefined();
    const refused = await limits.consume(rule, 'k').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitExceeded);
    expect((refused as RateLimitExceeded).retryAfterSeconds).toBeLessThanOrEqual(60);
    await limits.close();
  });

  it('starts a new window when the old one has passed', async () => {
    const rule = { name: 'test-window', points: 1, durationSeconds: 1 };
    const limits = new RateLimits(database.db);
    await limits.consume(rule, 'k');
    await expect(limits.consume(rule, 'k')).rejects.toBeInstanceOf(RateLimitExceeded);
    await database
      .db('rate_limits')
      .where('key', 'like', 'test-window:%')
      .update({ expire: Date.now() - 1 });
    await expect(limits.consume(rule, 'k')).resolves.toBeUndefined();
    await limits.close();
  });
});
