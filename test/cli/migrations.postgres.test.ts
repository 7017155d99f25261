import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import knex from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsTable } from '../../src/db/migrate.js';
import { runEntryPoint } from '../support/run-process.js';

/**
 * Who migrates a PostgreSQL database from the CLI: `migrate`, nothing else. A read-only command run
 * from a newer checkout must not migrate a database a fleet shares.
 */
const admin = knex({ client: 'pg', connection: process.env.DATABASE_URL, pool: { min: 0, max: 1 } });
const created: string[] = [];
let dataDir: string;

async function emptyDatabase() {
  const name = `idp_cli_${crypto.randomBytes(6).toString('hex')}`;
  await admin.raw(`create database ${name}`);
  created.push(name);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

const idp = (url: string, ...args: string[]) =>
  runEntryPoint('src/cli/main.ts', args, { DATABASE_URL: url, DATA_DIR: dataDir }, 120_000);

async function tablesOf(url: string): Promise<string[]> {
  const db = knex({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    return await db('information_schema.tables').where({ table_schema: 'public' }).pluck('table_name');
  } finally {
    await db.destroy();
  }
}

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'idp-cli-migrations-'));
});
afterAll(async () => {
  for (const name of created) await admin.raw(`drop database if exists ${name} with (force)`);
  await admin.destroy();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('the CLI on PostgreSQL and migrations', () => {
  const shipped = async () =>
    (await fs.readdir(path.resolve(import.meta.dirname, '../../migrations')))
      .filter((file) => /^\d{14}_[a-z0-9_]+\.(ts|js)$/.test(file))
      .map((file) => file.replace(/\.(ts|js)$/, ''))
      .sort();

  it('stops a command on a database behind this version with exit 2 and one line, writing nothing', async () => {
    const url = await emptyDatabase();
    const result = await idp(url, 'clients:list');
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const count = (await shipped()).length;
    expect(result.stderr).toBe(
      `error: the database is ${count} migrations behind this version: run \`identity-service migrate\` first\n`,
    );
    expect(await tablesOf(url)).toEqual([]);
  }, 130_000);

  it('migrate prints the migrations it applied, then none; other commands then run', async () => {
    const url = await emptyDatabase();
    const first = await idp(url, 'migrate');
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ applied: await shipped() });

    const again = await idp(url, 'migrate');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ applied: [] });

    const list = await idp(url, 'clients:list');
    expect(list.stderr).toBe('');
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([]);

    // One migration behind (a newer checkout's CLI on an older database): refused, nothing applied.
    const db = knex({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
    try {
      const last = (await shipped()).at(-1)!;
      await db(migrationsTable).where({ name: last }).delete();
      const refused = await idp(url, 'clients:list');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/the database is 1 migration behind this version/);
      expect(await db(migrationsTable).where({ name: last }).first()).toBeUndefined();

      // Ahead (a newer version migrated first, this older CLI runs): fine.
      await db(migrationsTable).insert({ name: last, batch: 2, migration_time: new Date() });
      await db(migrationsTable).insert({ name: '29991231000000_from_a_newer_version', batch: 3 });
      const ahead = await idp(url, 'clients:list');
      expect(ahead.stderr).toBe('');
      expect(ahead.code).toBe(0);
    } finally {
      await db.destroy();
    }
  }, 300_000);
});
