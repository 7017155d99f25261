import crypto from 'node:crypto';
import knex from 'knex';
import { afterAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.js';
import { RateLimitExceeded, RateLimits } from '../../src/http/rate-limit.js';

// PostgreSQL only (this file runs when DATABASE_URL is set): the limiter's own connections.
const admin = knex({ client: 'pg', connection: process.env.DATABASE_URL, pool: { min: 0, max: 1 } });
const name = `idp_test_rl_${crypto.randomBytes(6).toString('hex')}`;
afterAll(async () => {
  await admin.raw(`drop database if exists ${name} with (force)`);
  await admin.destroy();
});

describe("the rate limiter's PostgreSQL connections", () => {
  it('recover when the database could not be reached: the next request opens a new connection', async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    // knex connects lazily: the service's database handle exists before the database does.
    const db = knex({ client: 'pg', connection: { connectionString: url.toString() } });
    const limits = new RateLimits(db);
    const rule = { name: 'test-reconnect', points: 2, durationSeconds: 60 };
    try {
      await expect(limits.consume(rule, 'client')).rejects.toThrow(/does not exist/);

      await admin.raw(`create database ${name}`);
      await migrateToLatest(db);
      await expect(limits.consume(rule, 'client')).resolves.toBeUndefined();
      await expect(limits.consume(rule, 'client')).resolves.toBeUndefined();
      await expect(limits.consume(rule, 'client')).rejects.toBeInstanceOf(RateLimitExceeded);

      // A connection the server ends is replaced as well.
      await admin.raw(
        `select pg_terminate_backend(pid) from pg_stat_activity
         where datname = ? and application_name = 'identity-service-rate-limits'`,
        [name],
      );
      await expect
        .poll(() =>
          limits.reset(rule, 'client').then(
            () => 'reset',
            (error: Error) => error.message,
          ),
        )
        .toBe('reset');
      await expect(limits.consume(rule, 'client')).resolves.toBeUndefined();
    } finally {
      await limits.close();
      await db.destroy();
    }
  });
});
