import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import knex from 'knex';
import { inject } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';

export const onPostgres = Boolean(process.env.DATABASE_URL);

/**
 * A fresh, migrated database for one test file: a copy of the template database on PostgreSQL, or the
 * PGlite snapshot loaded in memory. `close` drops it.
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
  const snapshot = inject('pgliteSnapshot');
  if (!snapshot) throw new Error('global setup did not prepare a database snapshot');
  const pglite = await PGlite.create({ loadDataDir: new Blob([await fs.readFile(snapshot)]) });
  return openDatabase({ pglite });
}
