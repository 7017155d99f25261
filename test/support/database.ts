import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import knex from 'knex';
import { inject } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrationsTable } from '../../src/db/migrate.js';

export const onPostgres = Boolean(process.env.DATABASE_URL);

/**
 * A fresh, migrated database for one test file: a copy of the template database on PostgreSQL, or a
 * PGlite database like the migrated snapshot (below). `close` drops it, or gives the PGlite one back.
 */
export async function createTestDatabase(): Promise<DatabaseHandle & { url?: string }> {
  const template = inject('templateDatabase');
  const databaseUrl = process.env.DATABASE_URL;
  if (template && databaseUrl) {
    const name = `idp_test_${crypto.randomBytes(6).toString('hex')}`;
    const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`create database ${name} template ${template}`);
    const url = new URL(databaseUrl);
    url.pathname = `/${name}`;
    const handle = await openDatabase({ databaseUrl: url.toString(), poolMax: 10 });
    return {
      ...handle,
      url: url.toString(),
      async close() {
        await handle.close();
        await admin.raw(`drop database if exists ${name} with (force)`);
        await admin.destroy();
      },
    };
  }
  const pooled = await takeEmbeddedDatabase();
  const handle = await openDatabase({ pglite: pooled.connection });
  let closed = false;
  return {
    ...handle,
    async close() {
      if (closed) return;
      closed = true;
      await handle.close();
      await giveBackEmbeddedDatabase(pooled);
    },
  };
}

/**
 * PGlite databases of this test process, kept from one test file for the next. Loading the migrated
 * snapshot costs a file ~1.5 s of CPU (untarring it into PGlite's file system, starting PostgreSQL);
 * making a used database like new costs ~0.2 s: every table emptied, the rows migrations seed put back,
 * the session's settings, listeners, prepared statements and locks dropped. A database whose schema a
 * test changed (a table renamed or created, a migration rolled back or recorded) is closed instead.
 */
interface EmbeddedDatabase {
  pglite: PGlite;
  /** What knex is given: the database, except that closing it leaves it open for the next file. */
  connection: PGlite;
  /** Empties every table and puts the migrations' seed rows back, as in the snapshot. */
  likeNew: string;
  schema: string;
}

const idleEmbeddedDatabases: EmbeddedDatabase[] = [];
const pristineSchema = 'test_pristine_rows';

async function takeEmbeddedDatabase(): Promise<EmbeddedDatabase> {
  const idle = idleEmbeddedDatabases.pop();
  if (!idle) return loadEmbeddedDatabase();
  await idle.pglite.exec('reset all; unlisten *; deallocate all; select pg_advisory_unlock_all();');
  await idle.pglite.exec(idle.likeNew);
  return idle;
}

async function giveBackEmbeddedDatabase(database: EmbeddedDatabase): Promise<void> {
  if (database.pglite.closed) return;
  if ((await schemaOf(database.pglite)) === database.schema) idleEmbeddedDatabases.push(database);
  else await database.pglite.close();
}

async function loadEmbeddedDatabase(): Promise<EmbeddedDatabase> {
  const snapshot = inject('pgliteSnapshot');
  if (!snapshot) throw new Error('global setup did not prepare a database snapshot');
  const pglite = await PGlite.create({ loadDataDir: new Blob([await fs.readFile(snapshot)]) });
  const { rows } = await pglite.query<{ table: string }>(
    `select format('%I.%I', schemaname, tablename) as table from pg_tables
      where schemaname = 'public' and tablename not like '${migrationsTable}%'`,
  );
  const tables = rows.map((row) => row.table);
  const seeded: string[] = [];
  for (const table of tables) {
    if ((await pglite.query(`select from ${table} limit 1`)).rows.length > 0) seeded.push(table);
  }
  await pglite.exec(
    `create schema ${pristineSchema};` +
      seeded.map((table, index) => `create table ${pristineSchema}.t${index} as table ${table};`).join(''),
  );
  // Foreign keys are not checked while the rows go back (session_replication_role): they were valid.
  const likeNew =
    `set session_replication_role = replica; truncate ${tables.join(', ')} restart identity;` +
    seeded.map((table, index) => `insert into ${table} select * from ${pristineSchema}.t${index};`).join('') +
    'set session_replication_role = origin;';
  const connection = new Proxy(pglite, {
    get(target, property) {
      if (property === 'close') return async () => {};
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pglite, connection, likeNew, schema: await schemaOf(pglite) };
}

/** The relations and columns of every schema but the system's, and the migrations recorded. */
async function schemaOf(pglite: PGlite): Promise<string> {
  const { rows } = await pglite.query<{ schema: string }>(
    `select (select string_agg(format('%s.%s:%s:%s', n.nspname, c.relname, c.relkind,
                   (select count(*) from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped)),
                   ',' order by n.nspname, c.relname)
               from pg_class c join pg_namespace n on n.oid = c.relnamespace
              where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_%')
            || '|' || (select count(*) from ${migrationsTable}) as schema`,
  );
  return rows[0]!.schema;
}
