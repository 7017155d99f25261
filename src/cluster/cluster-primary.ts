import cluster, { type Worker } from 'node:cluster';
import type { MainConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { isForSiblings, workerIndexVariable } from './cluster-messages.js';

/**
 * HTTP_WORKERS > 1: this process only supervises. Workers start one after another, so the first
 * alone migrates the database and writes development secrets before the others read them; they all
 * accept on the same listening socket themselves (see `schedulingPolicy` below). A worker that dies while
 * serving is replaced. One that dies during the service's first start stops it (a bad database URL must
 * not become a crash loop); a replacement that can't start (the database away at that moment) is tried
 * again, 1 s later, then 2, 4... up to a minute apart, while the other workers go on serving: stopping
 * the service there would take them down for the fault of one. SIGTERM/SIGINT stop the workers (each
 * drains its requests), then this process.
 */
export async function runClusterPrimary(config: MainConfig, logger: Logger): Promise<void> {
  // node:cluster's default on Linux (SCHED_RR) accepts every connection here and passes it on to a
  // worker; one passed to a worker at the moment it dies was never answered nor closed (its client
  // waited for its own timeout). With SCHED_NONE the workers accept from the shared socket themselves:
  // a connection a dead worker had not yet accepted waits in the kernel's queue for the other worker,
  // and one it had accepted is reset with it. The kernel spreads connections less evenly than turns.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const workers = new Map<number, Worker>();
  let stopping = false;

  const start = (index: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({ [workerIndexVariable]: String(index) });
      workers.set(index, worker);
      let listening = false;
      worker.once('listening', () => {
        listening = true;
        resolve();
      });
      worker.on('message', (message: unknown) => {
        // An event a worker's relay published on the embedded bus reaches the subscribers of every
        // worker; what a worker told its caches (a session ended...) reaches the others' caches.
        if (!isForSiblings(message)) return;
        for (const [otherIndex, other] of workers) {
          if (otherIndex !== index && other.isConnected()) other.send(message);
        }
      });
      worker.once('exit', (code, signal) => {
        if (workers.get(index) === worker) workers.delete(index);
        if (stopping) return;
        if (!listening) {
          reject(new Error(`worker ${index} exited while starting (code ${code}, signal ${signal})`));
          return;
        }
        logger.error({ worker: index, code, signal }, 'worker died; starting a new one');
        replace(index, 0);
      });
    });

  const replace = (index: number, failedAttempts: number) => {
    const delay = Math.min(60_000, 1_000 * 2 ** failedAttempts);
    setTimeout(() => {
      if (stopping) return;
      start(index).catch((error: unknown) => {
        logger.error(
          { worker: index, err: error, attempts: failedAttempts + 1 },
          'a replacement worker could not start; trying again',
        );
        replace(index, failedAttempts + 1);
      });
      // Not unref'd: with every worker gone, this timer is what keeps the supervisor to try again.
    }, delay);
  };

  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping workers');
    await Promise.all(
      [...workers.values()].map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker.isDead()) return resolve();
            worker.once('exit', () => resolve());
            worker.process.kill('SIGTERM');
          }),
      ),
    );
    logger.info('stopped');
    process.exit(exitCode);
  };
  const fail = (error: unknown) => {
    logger.fatal({ err: error }, 'cannot start the service');
    void stop('startup failure', 1);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  try {
    for (let index = 1; index <= config.httpWorkers; index++) await start(index);
  } catch (error) {
    fail(error);
    return;
  }
  logger.info(
    { issuer: config.issuer, port: config.port, workers: config.httpWorkers },
    `identity service listening on ${config.issuer} (${config.httpWorkers} workers)`,
  );
}
