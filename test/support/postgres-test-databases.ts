import crypto from 'node:crypto';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { prepareLikeNew, schemaOf, type ScriptRunner } from './database-like-new.js';

/**
 * PostgreSQL databases of this test process, kept from one test file for the next like the PGlite ones
 * (database.ts). Copying the template costs the server ~0.5 s a file (CREATE DATABASE writes the
 * whole copy through the WAL) and dropping it more; emptying a used one and putting the migrations'
 * rows back a few milliseconds. One that a test left changed (its schema, or rows still locked by a
 * process it started) is dropped instead. global-setup.ts drops them all at the end of the run.
 */
interface PostgresTestDatabase {
  name: string;
  url: string;
  likeNew: string;
  schema: string;
}

const idleDatabases: PostgresTestDatabase[] = [];

export async function takePostgresDatabase(
  template: string,
  serverUrl: string,
  prefix: string,
): Promise<DatabaseHandle & { url: string }> {
  let database = idleDatabases.pop();
  if (database && !(await madeLikeNew(database))) {
    await dropDatabase(serverUrl, database.name);
    database = undefined;
  }
  database ??= await copyTemplate(template, serverUrl, prefix);
  const owned = database;
  const handle = await openDatabase({ databaseUrl: owned.url, poolMax: 10 });
  let closed = false;
  return {
    ...handle,
    url: owned.url,
    async close() {
      if (closed) return;
      closed = true;
      await handle.close();
      const unchanged = await withClient(
        owned.url,
        async (client) => (await schemaOf(client)) === owned.schema,
      );
      if (unchanged) idleDatabases.push(owned);
      else await dropDatabase(serverUrl, owned.name);
    },
  };
}

async function copyTemplate(
  template: string,
  serverUrl: string,
  prefix: string,
): Promise<PostgresTestDatabase> {
  const name = `${prefix}${crypto.randomBytes(6).toString('hex')}`;
  await withClient(serverUrl, (client) => client.run(`create database ${name} template ${template}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return withClient(url.toString(), async (client) => {
    const likeNew = await prepareLikeNew(client);
    return { name, url: url.toString(), likeNew, schema: await schemaOf(client) };
  });
}

/**
 * Ends what the last file's processes left connected, empties the database and puts its seed rows
 * back; false when something still holds its rows.
 */
async function madeLikeNew(database: PostgresTestDatabase): Promise<boolean> {
  const stragglers = `select pg_terminate_backend(pid) from pg_stat_activity
                       where datname = current_database() and pid <> pg_backend_pid();`;
  return withClient(database.url, (client) =>
    client.run(`${stragglers} set lock_timeout = '2s'; ${database.likeNew}`).then(
      () => true,
      () => false,
    ),
  );
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await withClient(serverUrl, (client) => client.run(`drop database if exists ${name} with (force)`));
}

async function withClient<T>(url: string, use: (client: ScriptRunner) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use({
      rows: async <Row>(sql: string) => (await client.query(sql)).rows as Row[],
      run: async (script) => void (await client.query(script)),
    });
  } finally {
    await client.end();
  }
}
