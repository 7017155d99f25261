import { afterEach, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest, migrationsTable } from '../../src/db/migrate.js';
import { createTestDatabase } from '../support/database.js';

let database: DatabaseHandle | undefined;
afterEach(async () => {
  await database?.close();
  database = undefined;
});

const tables = async (db: DatabaseHandle['db']) =>
  (
    await db.raw<{ rows: { table_name: string }[] }>(
      `select table_name from information_schema.tables
        where table_schema = current_schema() and table_name like '%migrations%' order by 1`,
    )
  ).rows.map((row) => row.table_name);

describe('the migrations table', () => {
  it('is the service’s own, not knex’s default', async () => {
    database = await createTestDatabase();
    expect(await tables(database.db)).toEqual([migrationsTable, `${migrationsTable}_lock`]);
  });

  it('adopts knex_migrations of a database migrated by an earlier version: nothing re-runs', async () => {
    database = await createTestDatabase();
    const { db } = database;
    // The database as the earlier version left it.
    await db.raw(`alter table ${migrationsTable} rename to knex_migrations`);
    await db.raw(`alter table ${migrationsTable}_lock rename to knex_migrations_lock`);
    await db.raw(`alter sequence ${migrationsTable}_id_seq rename to knex_migrations_id_seq`);
    const applied = (await db('knex_migrations').count<{ count: string }[]>('* as count'))[0]!.count;

    expect(await migrateToLatest(db)).toEqual([]);
    expect(await tables(db)).toEqual([migrationsTable, `${migrationsTable}_lock`]);
    expect((await db(migrationsTable).count<{ count: string }[]>('* as count'))[0]!.count).toBe(applied);
    // New rows still get ids from the renamed sequence.
    await db(migrationsTable).insert({ name: 'later', batch: 99, migration_time: new Date() });
  });

  it('leaves a host’s knex_migrations alone', async () => {
    database = await createTestDatabase();
    const { db } = database;
    await db.schema.createTable('knex_migrations', (table) => {
      table.increments('id');
      table.string('name');
      table.integer('batch');
      table.timestamp('migration_time');
    });
    await db('knex_migrations').insert({ name: 'host_0001_orders', batch: 1, migration_time: new Date() });

    expect(await migrateToLatest(db)).toEqual([]);
    expect(await db('knex_migrations').pluck('name')).toEqual(['host_0001_orders']);
  });

  it('at this version, a start applies nothing; a node migrating or a newer version still stops it', async () => {
    database = await createTestDatabase();
    const { db } = database;
    expect(await migrateToLatest(db)).toEqual([]);

    // Another node holds knex's lock (migrating): knex refuses, as it did before the shortcut.
    await db(`${migrationsTable}_lock`).update({ is_locked: 1 });
    await expect(migrateToLatest(db)).rejects.toThrow(/lock/i);
    await db(`${migrationsTable}_lock`).update({ is_locked: 0 });

    // A migration this version doesn't ship (a newer version ran first): knex's refusal, as before.
    await db(migrationsTable).insert({
      name: '29991231000000_from_the_future.js',
      batch: 99,
      migration_time: new Date(),
    });
    await expect(migrateToLatest(db)).rejects.toThrow(/corrupt/i);
  });
});
