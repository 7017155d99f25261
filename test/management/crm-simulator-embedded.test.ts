import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.js';
import { newDataDirectory } from '../support/new-data-directory.js';
import { repositoryRoot, runEntryPoint } from '../support/run-process.js';

/**
 * `npm run crm-sim -- --embedded`: the simulator with a service of its own on the embedded database in
 * DATA_DIR, whatever DATABASE_URL says (CI's PostgreSQL pass leaves this file to the PGlite pass).
 */
describe('the crm simulator on the embedded database', () => {
  it('--embedded holds DATA_DIR like npm start: the CLI goes through it, a second process is refused', async () => {
    const dataDir = await newDataDirectory('idp-crm-sim-');
    const environment = { DATA_DIR: dataDir, PORT: String(await freePort()) };
    const simulator = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/management/crm-simulator/crm-sim.ts',
        '--embedded',
        '--seed',
        '5',
        '--days',
        '6',
        '--leads-per-day',
        '3',
        '--port',
        String(await freePort()),
      ],
      {
        cwd: repositoryRoot,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', ...environment },
      },
    );
    const exited = new Promise<number | null>((resolve) => simulator.once('exit', resolve));
    let output = '';
    simulator.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    simulator.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      for (let waited = 0; !output.includes('history published') && waited < 90_000; waited += 200) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(output).toContain('history published');
      // The dashboards open on the current month: the simulator names the URL of the simulated period.
      expect(output).toContain(
        `"dashboards": "http://localhost:${environment.PORT}/en/management/dashboards?from=2026-01-01&to=2026-01-07"`,
      );

      // The CLI hands its command to the simulator's service (the database it serves), as with npm start.
      await expect(fs.stat(path.join(dataDir, 'control.sock'))).resolves.toBeDefined();
      const email = 'boss@example.com';
      const created = await runEntryPoint(
        'src/cli/main.ts',
        ['users:create', '--email', email, '--password', 'a long passphrase', '--role', 'super_admin'],
        environment,
      );
      // It could only succeed through the socket: the simulator holds the data directory's lock.
      expect(created.stderr).toBe('');
      expect(created.code).toBe(0);
      expect(created.stdout).toContain(email);

      // A second process can't open the same data directory.
      const second = await runEntryPoint('src/main.ts', [], {
        ...environment,
        PORT: String(await freePort()),
      });
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/Cannot start: the embedded database in .* is in use by another process/);
      simulator.kill('SIGTERM');
      await exited;
      // Stopped, it lets go of the data directory.
      await expect(fs.stat(path.join(dataDir, 'control.sock'))).rejects.toThrow();
    } finally {
      simulator.kill('SIGTERM');
      await exited;
      await fs.rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
    }
  }, 180_000);
});
