import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { buildPgliteSeed, seedNewDataDirectory } from '../../src/db/pglite-seed.js';

describe('the embedded database seed (a first start without initdb)', () => {
  let root: string;
  let seed: string;
  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'idp-seed-'));
    seed = path.join(root, 'seed');
    // The run's migrated snapshot written out as a data directory is what the build's seed is; without
    // one (a run on PostgreSQL) the build's own step makes it (initdb and every migration: slower).
    const snapshot = inject('pgliteSnapshot');
    if (snapshot) {
      const pglite = await PGlite.create({
        dataDir: seed,
        loadDataDir: new Blob([await fs.readFile(snapshot)]),
      });
      await pglite.close();
    } else {
      await buildPgliteSeed(seed);
    }
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  // Three PGlite starts (the copy, its reopen, the seed): seconds each on a busy machine.
  it(
    'gives a new data directory a migrated database that keeps what is written to it',
    { timeout: 120_000 },
    async () => {
      const dataDir = path.join(root, 'first-start', 'pgdata');
      expect(await seedNewDataDirectory(dataDir, seed)).toBe(true);
      const first = await openDatabase({ pgliteDataDir: dataDir });
      expect(await migrateToLatest(first.db)).toEqual([]);
      await first.db('reference_data_entries').insert({
        entity: 'subject',
        key: 'seeded',
        title: JSON.stringify({ en: 'Seeded' }),
        display_order: 1,
      });
      await first.close();

      // The next start finds the database: no second seeding over it.
      expect(await seedNewDataDirectory(dataDir, seed)).toBe(false);
      const reopened = await openDatabase({ pgliteDataDir: dataDir });
      expect(await reopened.db('reference_data_entries').where({ key: 'seeded' }).pluck('key')).toEqual([
        'seeded',
      ]);
      await reopened.close();
      // The seed itself is untouched by what the copy received.
      const pristine = await openDatabase({ pgliteDataDir: seed });
      expect(await pristine.db('reference_data_entries').where({ key: 'seeded' }).pluck('key')).toEqual([]);
      await pristine.close();
    },
  );

  it('leaves a directory with files in it alone', async () => {
    const dataDir = path.join(root, 'foreign');
    await fs.mkdir(dataDir, { recursive: true });
    await fs.writeFile(path.join(dataDir, 'notes.txt'), 'mine');
    expect(await seedNewDataDirectory(dataDir, seed)).toBe(false);
    expect(await fs.readdir(dataDir)).toEqual(['notes.txt']);
  });

  it('does nothing where no seed was built (running from source)', async () => {
    const dataDir = path.join(root, 'unseeded');
    expect(await seedNewDataDirectory(dataDir, path.join(root, 'no-such-seed'))).toBe(false);
    await expect(fs.access(dataDir)).rejects.toThrow();
  });
});
