import fs from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import knex, { type Knex } from 'knex';
import ClientPGLite from 'knex-pglite';
import pg from 'pg';

/** The query builder every repository receives; inside a transaction, pass the `Knex.Transaction`. */
export type Database = Knex;
export type Queryable = Knex | Knex.Transaction;

export type DatabaseKind = 'postgres' | 'pglite';

export interface DatabaseHandle {
  db: Database;
  kind: DatabaseKind;
  close(): Promise<void>;
}

// int8 (count(*), bigint ids) as number: our counters never exceed 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface OpenDatabaseOptions {
  /** PostgreSQL connection string; when absent, PGlite is used. */
  databaseUrl?: string | undefined;
  poolMax?: number;
  /** Directory of the embedded database; absent = in memory (tests). */
  pgliteDataDir?: string | undefined;
  /** An already-open PGlite instance (tests load a migrated snapshot into one). */
  pglite?: PGlite;
}

/**
 * knex-pglite labels a delete's result 'DEL' instead of 'DELETE', so knex hands back the raw result
 * instead of the affected row count it gives on pg. Same answer on both databases:
 */
class PGliteClient extends (ClientPGLite as unknown as new (config: unknown) => {
  processResponse(obj: { method?: string; returning?: unknown }, runner: unknown): unknown;
}) {
  override processResponse(obj: { method?: string; returning?: unknown }, runner: unknown): unknown {
    const result = super.processResponse(obj, runner);
    if (
      obj.method === 'del' &&
      !obj.returning &&
      result &&
      typeof result === 'object' &&
      'affectedRows' in result
    ) {
      return (result as { affectedRows: number }).affectedRows;
    }
    return result;
  }
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const db = knex({
      client: 'pg',
      connection: { connectionString: options.databaseUrl, application_name: 'identity-service' },
      pool: { min: 0, max: options.poolMax ?? 10 },
    });
    await db.raw('select 1');
    return { db, kind: 'postgres', close: () => db.destroy() };
  }

  let pglite = options.pglite;
  if (!pglite) {
    if (options.pgliteDataDir) {
      await fs.mkdir(path.dirname(options.pgliteDataDir), { recursive: true });
    }
    pglite = await PGlite.create(options.pgliteDataDir);
  }
  const db = knex({ client: PGliteClient as unknown as typeof knex.Client, connection: { pglite } as never });
  await db.raw('select 1');
  // knex-pglite closes the PGlite instance when its single connection is destroyed.
  return { db, kind: 'pglite', close: () => db.destroy() };
}
