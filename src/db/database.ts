import fs from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import knex, { type Knex } from 'knex';
import ClientPGLite from 'knex-pglite';
import pg from 'pg';
import type { Logger } from '../logger.js';
import { seedNewDataDirectory } from './pglite-seed.js';
import { keepPoolOutsideRequests } from './pool-outside-requests.js';

/** The query builder every repository receives; inside a transaction, pass the `Knex.Transaction`. */
export type Database = Knex;
export type Queryable = Knex | Knex.Transaction;

export type DatabaseKind = 'postgres' | 'pglite';

export interface DatabaseHandle {
  db: Database;
  kind: DatabaseKind;
  close(): Promise<void>;
}

/**
 * int8 (count(*), bigint ids) as number: our counters never exceed 2^53. Set on our own connections
 * only, never pg's global parsers: a host app sharing the process keeps pg's defaults.
 */
const typeParsers = {
  getTypeParser: (oid: number, format?: string): unknown =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as 'text'),
};

/**
 * The longest a query waits for a PostgreSQL connection, a new one (TCP, TLS, authentication) or a
 * pooled one, so a request never hangs on a database that is away: it fails within this and answers
 * 503 (database-unavailable.ts). Without it pg waits for a connection forever and knex for a pooled
 * one 60 s.
 */
export const defaultDatabaseTimeoutMs = 5_000;

export interface OpenDatabaseOptions {
  /** PostgreSQL connection string; when absent, PGlite is used. */
  databaseUrl?: string | undefined;
  poolMax?: number;
  /** See defaultDatabaseTimeoutMs. */
  timeoutMs?: number;
  /** Where knex's warnings go (a dropped pooled connection, ...); default the console. */
  logger?: Logger;
  /** Directory of the embedded database; absent = in memory (tests). */
  pgliteDataDir?: string | undefined;
  /** An already-open PGlite instance (tests load a migrated snapshot into one). */
  pglite?: PGlite;
  /**
   * The PostgreSQL schema of the service's tables (created if missing), to share a database with a
   * host app: the service's connections see this schema only. Absent: the default (`public`).
   */
  schema?: string | undefined;
}

/**
 * PostgreSQL's memory inside PGlite's WebAssembly memory, which never shrinks: the defaults are sized
 * for a server (shared_buffers 128 MB), while the embedded database of one service holds a few
 * megabytes of hot rows. 16 MB of buffers keep every table and index of a small installation cached.
 */
const pgliteMemorySettings = ['-c', 'shared_buffers=16MB'];

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
    const timeoutMs = options.timeoutMs ?? defaultDatabaseTimeoutMs;
    const db = knex({
      client: 'pg',
      connection: {
        connectionString: options.databaseUrl,
        application_name: 'identity-service',
        types: typeParsers,
        connectionTimeoutMillis: timeoutMs,
        // A peer gone without a word (host down, network cut) is noticed on idle connections too.
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
      },
      // A connection the server closed (restart, failover) is known as such from pg's 'error' or
      // 'end' event; the pool drops it at the next acquire and opens a new one.
      pool: { min: 0, max: options.poolMax ?? 10 },
      acquireConnectionTimeout: timeoutMs,
      ...(options.logger ? { log: knexLog(options.logger) } : {}),
      ...(options.schema ? { searchPath: [options.schema] } : {}),
    });
    keepPoolOutsideRequests(db);
    await db.raw('select 1');
    if (options.schema) await db.raw('create schema if not exists ??', [options.schema]);
    return { db, kind: 'postgres', close: () => db.destroy() };
  }

  let pglite = options.pglite;
  if (!pglite) {
    if (options.pgliteDataDir) {
      await fs.mkdir(path.dirname(options.pgliteDataDir), { recursive: true });
    }
    if (options.pgliteDataDir) {
      await seedNewDataDirectory(options.pgliteDataDir);
      // PGlite writes its files 0666 (the seed's too): only the directory keeps other local users from
      // reading and writing the database, 0700 as PostgreSQL requires of its own. Again at every start,
      // for a directory made by an earlier version.
      await fs.mkdir(options.pgliteDataDir, { recursive: true, mode: 0o700 });
      await fs.chmod(options.pgliteDataDir, 0o700);
    }
    pglite = await PGlite.create({
      dataDir: options.pgliteDataDir,
      startParams: [...PGlite.defaultStartParams, ...pgliteMemorySettings],
    });
  }
  const db = knex({
    client: PGliteClient as unknown as typeof knex.Client,
    connection: { pglite } as never,
    ...(options.schema ? { searchPath: [options.schema] } : {}),
  });
  keepPoolOutsideRequests(db);
  await db.raw('select 1');
  if (options.schema) await db.raw('create schema if not exists ??', [options.schema]);
  // knex-pglite closes the PGlite instance when its single connection is destroyed.
  return { db, kind: 'pglite', close: () => db.destroy() };
}

function knexLog(logger: Logger): Knex.Config['log'] {
  return {
    warn: (message: unknown) => logger.warn({ knex: message }, 'database warning'),
    error: (message: unknown) => logger.error({ knex: message }, 'database error'),
    deprecate: (method: string, alternative: string) =>
      logger.warn({ method, alternative }, 'knex deprecation'),
    debug: () => {},
  };
}
