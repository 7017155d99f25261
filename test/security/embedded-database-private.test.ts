import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';

// PGlite writes its files 0666, as the seed copied into a new DATA_DIR has them: in a directory other
// local users may enter, they could read every password hash and TOTP secret, and write the database.
const parent = await fs.mkdtemp(path.join(os.tmpdir(), 'embedded-database-private-'));
afterAll(() => fs.rm(parent, { recursive: true, force: true }));

async function openAndClose(dataDir: string): Promise<void> {
  const database = await openDatabase({ pgliteDataDir: dataDir });
  await database.db.raw('select 1');
  await database.close();
}

describe('the embedded database’s directory', () => {
  it('is the owner’s alone on a new DATA_DIR', async () => {
    const dataDir = path.join(parent, 'new', 'pgdata');
    await openAndClose(dataDir);
    expect((await fs.stat(dataDir)).mode & 0o777).toBe(0o700);
  });

  it('is made the owner’s alone on a DATA_DIR from an earlier version', async () => {
    const dataDir = path.join(parent, 'earlier', 'pgdata');
    await openAndClose(dataDir);
    await fs.chmod(dataDir, 0o755);
    await openAndClose(dataDir);
    expect((await fs.stat(dataDir)).mode & 0o777).toBe(0o700);
  });
});
