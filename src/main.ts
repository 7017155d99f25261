import cluster from 'node:cluster';
import { workerIndexVariable } from './cluster/cluster-messages.js';
import { ConfigError, loadMainConfig } from './config.js';
import { createLogger } from './logger.js';

/**
 * `npm start`. One process serves, or with HTTP_WORKERS > 1 this one supervises that many workers
 * (loaded lazily: the supervisor holds none of the service's code).
 */
async function main(): Promise<void> {
  let config;
  try {
    config = loadMainConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  if (config.httpWorkers > 1 && cluster.isPrimary) {
    const { runClusterPrimary } = await import('./cluster/cluster-primary.js');
    return runClusterPrimary(config, logger);
  }
  const { runService } = await import('./run-service.js');
  await runService(config, logger, cluster.isWorker ? Number(process.env[workerIndexVariable]) : undefined);
}

await main();
