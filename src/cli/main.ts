#!/usr/bin/env node
import { systemClock } from '../clock.js';
import { ConfigError, loadMainConfig } from '../config.js';
import { openDatabase, type DatabaseHandle } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { claimDataDirectory, forwardCommand, type ControlChannel } from './control-channel.js';
import { invokedAs } from './invoked-as.js';
import { findCommand, runCommand } from './run-command.js';

/**
 * `identity-service <command>` (`npm run idp -- <command>` in this repository). With DATABASE_URL it talks to PostgreSQL. On the embedded database it
 * hands the command to the running service if there is one (PGlite is one process), else opens the
 * database itself. Prints JSON on stdout; errors on stderr with a non-zero exit code.
 */
async function main(argv: string[]): Promise<number> {
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
        await migrateToLatest(database.db);
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

function print(result: { exitCode: number; stdout: string; stderr: string }): number {
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.exitCode;
}

process.exitCode = await main(process.argv.slice(2));
