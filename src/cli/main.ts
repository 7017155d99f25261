#!/usr/bin/env node
import { systemClock } from '../clock.js';
import { ConfigError, loadMainConfig } from '../config.js';
import { openDatabase, type Database, type DatabaseHandle } from '../db/database.js';
import { migrateToLatest, pendingMigrations } from '../db/migrate.js';
import { CommandRefused, UsageError } from './command.js';
import { migrateCommand } from './commands/migrate.js';
import { claimDataDirectory, forwardCommand, type ControlChannel } from './control-channel.js';
import { invokedAs } from './invoked-as.js';
import { readStandardInput, withPasswordFromStdin } from './password-from-stdin.js';
import { findCommand, runCommand } from './run-command.js';

/**
 * `identity-service <command>` (`npm run idp -- <command>` in this repository). With DATABASE_URL it
 * talks to PostgreSQL. On the embedded database it hands the command to the running service if there is
 * one (PGlite is one process), else opens the database itself. Prints JSON on stdout; errors on stderr
 * with a non-zero exit code. Who migrates: bringUpToDate.
 */
async function main(commandLine: string[]): Promise<number> {
  let argv: string[];
  try {
    argv = await withPasswordFromStdin(commandLine, readStandardInput);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`error: ${error.message}\n`);
    return 2;
  }
  let config;
  try {
    config = loadMainConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    throw error;
  }

  const name = invokedAs();
  const needsDatabase = findCommand(argv[0])?.needsDatabase ?? false;
  if (needsDatabase && !config.databaseUrl) {
    const forwarded = await forwardCommand(config.dataDir, argv, name);
    if (forwarded) return print(forwarded);
  }

  let database: DatabaseHandle | undefined;
  let channel: ControlChannel | undefined;
  try {
    const result = await runCommand(
      argv,
      async () => {
        if (!config.databaseUrl) channel = await claimDataDirectory(config.dataDir);
        database = await openDatabase({
          databaseUrl: config.databaseUrl,
          schema: config.databaseSchema,
          pgliteDataDir: `${config.dataDir}/pgdata`,
        });
        await bringUpToDate(database.db, argv[0], config.databaseUrl !== undefined, name);
        return { db: database.db, clock: systemClock };
      },
      name,
    );
    return print(result);
  } finally {
    await database?.close();
    await channel?.close();
  }
}

/**
 * Who migrates: `migrate` itself (so it prints what it applied); on the embedded database, any command,
 * first (as `npm start` does: the data directory is this machine's alone); on PostgreSQL, nothing else.
 * A database a fleet shares is migrated by a deliberate `migrate` or a start of the service, never by a
 * read such as `clients:list` run from a newer checkout: there a command on a database behind this
 * version stops before touching it.
 */
async function bringUpToDate(db: Database, command: string | undefined, onPostgres: boolean, name: string) {
  if (command === migrateCommand.name) return;
  if (!onPostgres) {
    await migrateToLatest(db);
    return;
  }
  const pending = await pendingMigrations(db);
  if (pending.length === 0) return;
  const count = pending.length === 1 ? '1 migration' : `${pending.length} migrations`;
  throw new CommandRefused(`the database is ${count} behind this version: run \`${name} migrate\` first`);
}

function print(result: { exitCode: number; stdout: string; stderr: string }): number {
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.exitCode;
}

process.exitCode = await main(process.argv.slice(2));
