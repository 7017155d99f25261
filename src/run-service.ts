import { connectionsInAll, connectionsPerAddress, createHttpServer } from './http/http-server.js';
import { issuerPath } from './http/base-path.js';
import { holdDataDirectory } from './cli/control-channel.js';
import { runCommand } from './cli/run-command.js';
import { systemClock } from './clock.js';
import { ClusterEventBus } from './cluster/cluster-event-bus.js';
import { relayNoticesBetweenWorkers } from './cluster/worker-notices.js';
import type { MainConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { createEventBus } from './events/create-event-bus.js';
import { resolveSecrets } from './keys/development-secrets.js';
import type { Logger } from './logger.js';
import { listen, ListenError } from './operations/listen.js';
import { createIdentityService } from './service.js';

/**
 * One serving process: migrate, build the service, listen; SIGTERM/SIGINT drain in-flight requests,
 * then close. `workerIndex` is set in a cluster (HTTP_WORKERS > 1): worker 1 starts first and alone
 * (so it alone migrates), runs the hourly cleanup and publishes the event outbox; the embedded event
 * bus spans the workers.
 */
export async function runService(config: MainConfig, logger: Logger, workerIndex?: number): Promise<void> {
  const channel = await holdDataDirectory(config);
  // Outside production a first start generates keys (RSA, on the thread pool): beside the database's start.
  const secrets = resolveSecrets(config, logger);
  secrets.catch(() => {}); // awaited below; a failure to open the database comes first
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    schema: config.databaseSchema,
    poolMax: config.databasePoolMax,
    timeoutMs: config.databaseTimeoutMs,
    logger,
    pgliteDataDir: `${config.dataDir}/pgdata`,
  });
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ applied }, 'database migrated');

  // The one process of a machine that runs the jobs done once: alone, or worker 1 of a cluster.
  const runsMachineJobs = workerIndex === undefined || workerIndex === 1;
  const eventBus = await createEventBus(config, logger);
  const service = await createIdentityService({
    config,
    database,
    logger,
    secrets: await secrets,
    backgroundJobs: runsMachineJobs,
    relayEvents: runsMachineJobs,
    eventBus:
      workerIndex !== undefined && config.eventBus !== 'nats' ? new ClusterEventBus(eventBus) : eventBus,
  });
  // A worker's caches hear at once what its siblings tell theirs (a session ended, a grant revoked...).
  const stopRelayingNotices = workerIndex !== undefined ? relayNoticesBetweenWorkers() : undefined;
  // The CLI reaches the embedded database through this process while it runs.
  channel?.serve((argv, invokedAs) =>
    runCommand(argv, async () => ({ db: database.db, clock: systemClock }), invokedAs),
  );

  // Facing clients directly, each address holds a bounded number of connections; and all of them
  // together do, whoever is in front (http-server.ts).
  const server = createHttpServer(service.app.callback(), issuerPath(config.issuer), {
    connectionsPerAddress: config.trustedProxyHops === 0 ? connectionsPerAddress : undefined,
    connectionsInAll,
  });
  try {
    await listen(server, config.port, config.host);
  } catch (error) {
    if (!(error instanceof ListenError)) throw error;
    console.error(`Cannot start: ${error.message}.`);
    await service.close();
    await database.close();
    await channel?.close();
    process.exit(1);
  }
  if (workerIndex !== undefined) logger.info({ worker: workerIndex }, `worker ${workerIndex} ready`);
  else
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
    stopRelayingNotices?.();
    await service.close();
    await database.close();
    await channel?.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
