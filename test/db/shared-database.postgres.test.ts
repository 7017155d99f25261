import crypto from 'node:crypto';
import knex, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

/** The host's own migrations: its `users` table, listed in knex's default `knex_migrations`. */
const hostMigrations: Knex.MigrationSource<string> = {
  getMigrations: async () => ['host_0001_users'],
  getMigrationName: (name) => name,
  getMigration: async () => ({
    up: (db: Knex) =>
      db.schema.createTable('users', (table) => {
        table.increments('id');
        table.string('login').notNullable();
      }),
    down: (db: Knex) => db.schema.dropTable('users'),
  }),
};

const admin = knex({ client: 'pg', connection: process.env.DATABASE_URL, pool: { min: 0, max: 1 } });
const name = `idp_shared_${crypto.randomBytes(6).toString('hex')}`;
let url: string;
let host: Knex;
let database: DatabaseHandle;
let service: TestService;

beforeAll(async () => {
  await admin.raw(`create database ${name}`);
  const address = new URL(process.env.DATABASE_URL!);
  address.pathname = `/${name}`;
  url = address.toString();
  host = knex({ client: 'pg', connection: url, pool: { min: 0, max: 2 } });
  await host.migrate.latest({ migrationSource: hostMigrations });
  await host('users').insert({ login: 'host-user' });

  database = await openDatabase({ databaseUrl: url, schema: 'identity' });
  await migrateToLatest(database.db);
  service = await startTestService({ database });
});

afterAll(async () => {
  await service?.close();
  await database?.close();
  await host?.destroy();
  await admin.raw(`drop database if exists ${name} with (force)`);
  await admin.destroy();
});

describe('a database shared with a host app (DATABASE_SCHEMA)', () => {
  it('keeps the service’s tables in its schema, beside the host’s users and knex_migrations', async () => {
    const user = await createTestUser(service.service.db);
    expect(await host('users').select('login')).toEqual([{ login: 'host-user' }]);
    expect(await host('identity.users').where({ id: user.id }).pluck('id')).toEqual([user.id]);
    expect(await host('knex_migrations').pluck('name')).toEqual(['host_0001_users']);
    expect(await host('identity.identity_service_migrations').count('* as count')).not.toEqual([
      { count: '0' },
    ]);
    // Both keep migrating without seeing each other's list.
    expect((await host.migrate.latest({ migrationSource: hostMigrations }))[1]).toEqual([]);
    expect(await migrateToLatest(database.db)).toEqual([]);
  });

  it('serves from its schema: ready, and the host’s table never read', async () => {
    const ready = await fetch(service.url('/readyz'));
    expect(await ready.json()).toMatchObject({ status: 'ready' });
    const publicTables = await host.raw<{ rows: { table_name: string }[] }>(
      "select table_name from information_schema.tables where table_schema = 'public' order by 1",
    );
    expect(publicTables.rows.map((row) => row.table_name)).toEqual([
      'knex_migrations',
      'knex_migrations_lock',
      'users',
    ]);
  });
});
