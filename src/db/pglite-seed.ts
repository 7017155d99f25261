import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyDirectorySync } from './copy-directory.js';
import { openDatabase } from './database.js';
import { migrateToLatest } from './migrate.js';

/**
 * A migrated, empty embedded database directory, written by `npm run build` next to the compiled code
 * (dist/pglite-seed/). A first start on an empty data directory copies it instead of running
 * PostgreSQL's initdb and every migration: seconds of CPU and, because PGlite runs initdb in a second
 * instance whose WebAssembly memory stays mapped, hundreds of megabytes of resident memory. A plain
 * file copy, not PGlite's tarball loading, which holds the whole tarball in memory several times over.
 * Migrations still run after it (a seed older than the code only leaves fewer to apply). Under tsx
 * (no build) there is no seed and the first start takes the slow path.
 */
export const pgliteSeedDirectory = fileURLToPath(new URL('../../pglite-seed/', import.meta.url));

/** Writes a seed: a PGlite database in `directory`, migrated (write-pglite-seed.ts, at build). */
export async function buildPgliteSeed(directory: string): Promise<void> {
  await fs.rm(directory, { recursive: true, force: true });
  const handle = await openDatabase({ pgliteDataDir: directory });
  await migrateToLatest(handle.db);
  await handle.close();
}

/**
 * Copies the seed to `dataDir` when that directory is absent or empty and a seed was built; anything
 * else (a database, or files we didn't put there) is left to PGlite.
 */
export async function seedNewDataDirectory(dataDir: string, seed = pgliteSeedDirectory): Promise<boolean> {
  const entries = await fs.readdir(dataDir).catch(() => undefined);
  if (entries && entries.length > 0) return false;
  if (!(await exists(path.join(seed, 'PG_VERSION')))) return false;
  // Into a sibling first, then renamed: a start interrupted mid-copy leaves no half database behind.
  const partial = `${dataDir}.seeding`;
  await fs.rm(partial, { recursive: true, force: true });
  copyDirectorySync(seed, partial);
  if (entries) await fs.rmdir(dataDir);
  await fs.rename(partial, dataDir);
  return true;
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
