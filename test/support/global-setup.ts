import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import knex from 'knex';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** pg: the migrated template database each test file copies. */
    templateDatabase: string | undefined;
    /** pg: the start of the name of every database a test file copies (dropped at the end). */
    testDatabasePrefix: string | undefined;
    /** PGlite: a migrated data directory (tarball) each test file loads. */
    pgliteSnapshot: string | undefined;
    /** PGlite: the same database as a directory, the seed `npm run build` writes (new-data-directory.ts). */
    pgliteSeed: string | undefined;
  }
}

/**
 * Migrates once per run. On PostgreSQL (DATABASE_URL set) into a template database that each test file
 * clones with CREATE DATABASE ... TEMPLATE; on PGlite into a snapshot each file loads (a cold PGlite
 * start costs seconds, a snapshot load well under one).
 */
export default async function setup(project: TestProject) {
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl) {
    const template = `idp_test_template_${process.pid}`;
    const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`drop database if exists ${template}`);
    await admin.raw(`create database ${template}`);
    const url = new URL(databaseUrl);
    url.pathname = `/${template}`;
    const handle = await openDatabase({ databaseUrl: url.toString(), poolMax: 1 });
    await migrateToLatest(handle.db);
    await handle.close();
    const prefix = `idp_test_${process.pid}_`;
    project.provide('templateDatabase', template);
    project.provide('testDatabasePrefix', prefix);
    project.provide('pgliteSnapshot', undefined);
    project.provide('pgliteSeed', undefined);
    return async () => {
      // Test processes keep their databases from one file for the next (postgres-test-databases.ts).
      const copies: string[] = await admin('pg_database')
        .where('datname', 'like', `${prefix}%`)
        .pluck('datname');
      for (const copy of [...copies, template])
        await admin.raw(`drop database if exists ${copy} with (force)`);
      await admin.destroy();
    };
  }
  const pglite = await PGlite.create();
  const handle = await openDatabase({ pglite });
  await migrateToLatest(handle.db);
  const snapshot = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'idp-test-')), 'pglite.tar');
  const dump = await pglite.dumpDataDir('none');
  await fs.writeFile(snapshot, Buffer.from(await dump.arrayBuffer()));
  await handle.close();
  const seed = path.join(path.dirname(snapshot), 'pglite-seed');
  await (await PGlite.create({ dataDir: seed, loadDataDir: dump })).close();
  project.provide('templateDatabase', undefined);
  project.provide('testDatabasePrefix', undefined);
  project.provide('pgliteSnapshot', snapshot);
  project.provide('pgliteSeed', seed);
  return async () => {
    await fs.rm(path.dirname(snapshot), { recursive: true, force: true });
  };
}
