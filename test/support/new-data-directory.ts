import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { seedNewDataDirectory } from '../../src/db/pglite-seed.js';

/**
 * A new DATA_DIR for a service or CLI the test runs as a process, as `npm start` finds one on a first
 * start: `npm run build` ships a migrated seed that a first start copies in, but a process run from the
 * sources (tsx) has none and would take the slow path (initdb and every migration, seconds of CPU each
 * time). On the PGlite pass the run's seed (global-setup.ts) is copied in; on the PostgreSQL pass the
 * directory stays empty. Tests of the first start itself (pglite-seed, embedded-database-private) make
 * their own.
 */
export async function newDataDirectory(prefix: string): Promise<string> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  const seed = inject('pgliteSeed');
  // The service keeps its database in DATA_DIR/pgdata (run-service.ts).
  if (seed) await seedNewDataDirectory(path.join(dataDir, 'pgdata'), seed);
  return dataDir;
}
