import http from 'node:http';
import { claimDataDirectory, DataDirectoryInUse, type ControlChannel } from './cli/control-channel.js';
import { runCommand } from './cli/run-command.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { createLogger } from './logger.js';
import { createIdentityService } from './service.js';

/** `npm start`: load config, migrate, listen; SIGTERM/SIGINT drain in-flight requests, then close. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);

  let channel: ControlChannel | undefined;
  if (!config.databaseUrl) {
    try {
      channel = await claimDataDirectory(config.dataDir);
    } catch (error) {
      if (error instanceof DataDirectoryInUse) {
        console.error(`Cannot start: ${error.message}.`);
        process.exit(1);
      }
      throw error;
    }
  }
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    poolMax: config.databasePoolMax,
    pgliteDataDir: `${config.dataDir}/pgdata`,
  });
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ applied }, 'database migrated');

  const service = await createIdentityService({ config, database, logger, backgroundJobs: true });
  // The CLI reaches the embedded database through this process while it runs.
  channel?.serve((argv) => runCommand(argv, async () => ({ db: database.db, clock: systemClock })));

  const server = http.createServer(service.app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  logger.info(
    {
      issuer: config.issuer,
      port: config.port,
      database: database.kind,
      dataDir: database.kind === 'pglite' ? config.dataDir : undefined,
    },
    `identity service listening on ${config.issuer}`,
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: draining requests');
    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timeout = setTimeout(() => server.closeAllConnections(), 10_000);
    await drained;
    clearTimeout(timeout);
    await service.close();
    await database.close();
    await channel?.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

await main();
