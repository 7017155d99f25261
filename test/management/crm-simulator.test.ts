import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { serviceToken } from '../platform/support/platform-tokens.js';
import { freePort } from '../support/free-port.js';
import { newDataDirectory } from '../support/new-data-directory.js';
import { repositoryRoot, runEntryPoint } from '../support/run-process.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { groundTruth, startSimulatedCrmApi } from './support/crm-fixtures.js';

const history = generateCrmHistory({ seed: 5, start: '2026-01-01', days: 40, leadsPerDay: 8 });
let svc: TestService;
let crmApi: Awaited<ReturnType<typeof startSimulatedCrmApi>>;
beforeAll(async () => {
  crmApi = await startSimulatedCrmApi(() => groundTruth(history));
  svc = await startTestService();
  crmApi.attach(svc);
});
afterAll(async () => {
  await svc?.close();
  await crmApi?.close();
});

describe('the crm simulator', () => {
  it('makes the same history from the same seed, a different one from another', () => {
    const again = generateCrmHistory({ seed: 5, start: '2026-01-01', days: 40, leadsPerDay: 8 });
    expect(again).toEqual(history);
    expect(generateCrmHistory({ seed: 6, start: '2026-01-01', days: 40, leadsPerDay: 8 })).not.toEqual(
      history,
    );
    const types = new Set(history.map((envelope) => envelope.messageType));
    expect(types.size).toBe(14);
  });

  it('serves the snapshots only to a client-credentials token of the identity service with the scope', async () => {
    const get = (path: string, token?: string) =>
      fetch(`${crmApi.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const sales = '/api/v2/crm/aggregates/sales?from=2026-01-01&to=2026-01-21';
    expect((await get(sales)).status).toBe(401);
    expect((await get(sales, 'not.a.jwt')).status).toBe(401);
    const payoutsOnly = await serviceToken(svc, ['service:crm.teacher_payouts.read']);
    expect((await get(sales, payoutsOnly.token)).status).toBe(403);
    expect((await get('/api/v2/crm/teacher-payouts?period=2026-01', payoutsOnly.token)).status).toBe(200);
    const aggregates = await serviceToken(svc, ['service:crm.aggregates.read']);
    const answer = await get(sales, aggregates.token);
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as Record<string, unknown> & { generatedAt: string };
    expect(body).toEqual(
      JSON.parse(
        JSON.stringify({
          ...groundTruth(history).sales({ from: '2026-01-01', to: '2026-01-21' }, new Date(body.generatedAt)),
        }),
      ),
    );
    // Repeatable: the same period answers the same figures.
    const { generatedAt: _first, ...figures } = body;
    const { generatedAt: _second, ...again } = (await (await get(sales, aggregates.token)).json()) as Record<
      string,
      unknown
    >;
    expect(again).toEqual(figures);
    expect(
      (await get('/api/v2/crm/aggregates/sales?from=2026-02-01&to=2026-01-01', aggregates.token)).status,
    ).toBe(400);
  });

  it('runs as npm run crm-sim, printing what it published and the ground truth', async () => {
    const result = await runEntryPoint(
      'src/management/crm-simulator/crm-sim.ts',
      [
        '--seed',
        '5',
        '--days',
        '40',
        '--leads-per-day',
        '8',
        '--copies',
        '2',
        '--poison',
        '1',
        '--port',
        '0',
        '--exit',
      ],
      { LOG_LEVEL: 'silent', DATA_DIR: '/nonexistent-crm-sim' },
    );
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({
      history: history.length,
      published: history.length * 2 + 2 + 3,
      deadLetters: 1,
      rejected: 3,
    });
    expect(summary.groundTruth.balance.currencies).toEqual(
      groundTruth(history).balance(new Date()).currencies,
    );
  });

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
