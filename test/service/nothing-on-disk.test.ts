import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, loadMainConfig } from '../../src/config.js';
import { repositoryRoot } from '../support/run-process.js';

/** A library user's program: the defaults, no DATA_DIR, no secrets, an in-memory database. */
const program = `
import { createIdentityService, loadConfig, migrateToLatest, openDatabase } from ${JSON.stringify(
  path.join(repositoryRoot, 'src/index.ts'),
)};
const database = await openDatabase({});
await migrateToLatest(database.db);
const service = await createIdentityService({
  config: loadConfig({ ISSUER: 'http://127.0.0.1:1', LOG_LEVEL: 'silent' }),
  database,
});
await service.close();
await database.close();
console.log('closed');
`;

function run(script: string, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', path.join(repositoryRoot, 'node_modules/tsx/dist/loader.mjs'), script],
      { cwd, env: { PATH: process.env.PATH, HOME: cwd } },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('nothing written to disk unless configured', () => {
  it('a library user’s service writes nothing into its directory (secrets and database in memory)', async () => {
    const cwd = await fs.mkdtemp(path.join(os.tmpdir(), 'idp-host-'));
    const scripts = await fs.mkdtemp(path.join(os.tmpdir(), 'idp-program-'));
    try {
      const script = path.join(scripts, 'host.mts');
      await fs.writeFile(script, program);
      const { code, output } = await run(script, cwd);
      expect(output).toContain('closed');
      expect(code).toBe(0);
      expect(await fs.readdir(cwd)).toEqual([]);
    } finally {
      await fs.rm(cwd, { recursive: true, force: true });
      await fs.rm(scripts, { recursive: true, force: true });
    }
  }, 120_000);

  it('has no data directory by default; npm start and the CLI default to ./.data', () => {
    expect(loadConfig({}).dataDir).toBeUndefined();
    expect(loadMainConfig({}).dataDir).toBe(path.resolve('./.data'));
    expect(loadMainConfig({ DATA_DIR: '/srv/idp' }).dataDir).toBe('/srv/idp');
  });
});
