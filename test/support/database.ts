import fs from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { prepareLikeNew, schemaOf, type ScriptRunner } from './database-like-new.js';
import { takePostgresDatabase } from './postgres-test-databases.js';

export const onPostgres = Boolean(process.env.DATABASE_URL);

/**
 * A migrated database, as new, for one test file: a copy of the template database on PostgreSQL
 * (postgres-test-databases.ts), or a PGlite database like the migrated snapshot (below). `close` gives
 * it back for this process's next file, emptied when taken again.
 */
export async function createTestDatabase(): Promise<DatabaseHandle & { url?: string }> {
  const template = inject('templateDatabase');
  const databaseUrl = process.env.DATABASE_URL;
  if (template && databaseUrl)
    return takePostgresDatabase(template, databaseUrl, inject('testDatabasePrefix')!);
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

async function takeEmbeddedDatabase(): Promise<EmbeddedDatabase> {
  const idle = idleEmbeddedDatabases.pop();
  if (!idle) return loadEmbeddedDatabase();
  await idle.pglite.exec('reset all; unlisten *; deallocate all; select pg_advisory_unlock_all();');
  await idle.pglite.exec(idle.likeNew);
  return idle;
}

async function giveBackEmbeddedDatabase(database: EmbeddedDatabase): Promise<void> {
  if (database.pglite.closed) return;
  if ((await schemaOf(scriptRunner(database.pglite))) === database.schema)
    idleEmbeddedDatabases.push(database);
  else await database.pglite.close();
}

async function loadEmbeddedDatabase(): Promise<EmbeddedDatabase> {
  const snapshot = inject('pgliteSnapshot');
  if (!snapshot) throw new Error('global setup did not prepare a database snapshot');
  const pglite = await PGlite.create({ loadDataDir: new Blob([await fs.readFile(snapshot)]) });
  const runner = scriptRunner(pglite);
  const likeNew = await prepareLikeNew(runner);
  const connection = new Proxy(pglite, {
    get(target, property) {
      if (property === 'close') return async () => {};
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pglite, connection, likeNew, schema: await schemaOf(runner) };
}

function scriptRunner(pglite: PGlite): ScriptRunner {
  return {
    rows: async <Row>(sql: string) => (await pglite.query<Row>(sql)).rows,
    run: async (script) => void (await pglite.exec(script)),
  };
}
