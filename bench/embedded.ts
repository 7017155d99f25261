/**
 * npm run bench:embedded: the embedded default (PGlite) as a newcomer runs it. The built service is
 * started as `npm start` starts it, with no DATABASE_URL, on a fresh data directory (first start: the
 * database is created) and again on the same directory (reopen). Measured: start to the first answer of
 * discovery, resident memory at rest, and peak resident memory under load (discovery, JWKS,
 * client_credentials and introspection, as bench/oauth.ts drives them).
 *
 * Targets (issue 15): ≤ 300 MB at rest and under load, first start to discovery ≤ 3 s.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { openDatabase } from '../src/db/database.js';
import { createClient } from '../src/oidc/models/oauth-client.js';
import { freePort } from '../test/support/free-port.js';
import { atMost, reportRatios, type FloorRatio } from './support/floor-ratios.js';
import { startScript } from './support/production-service.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

const residentMegabytes = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** CPU time (user + system, all threads) of a process so far: a start's cost whatever else runs. */
function cpuMilliseconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Starts the built service on the data directory; resolves once discovery answers, with the time it took. */
async function start(
  dataDir: string,
  port: number,
): Promise<{ child: ChildProcess; startMs: number; cpuMs: number }> {
  const { environment, nodeFlags } = startScript();
  const began = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, 'dist/src/main.js'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...environment,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/.well-known/openid-configuration`);
      if (response.ok)
        return { child, startMs: performance.now() - began, cpuMs: cpuMilliseconds(child.pid!) };
    } catch {
      // not listening yet
    }
    if (performance.now() - began > 180_000) throw new Error('the service did not start in 180 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Resident memory after the process has sat idle a moment (timers, lazy work done). */
async function atRest(pid: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 3000));
  return residentMegabytes(pid);
}

async function main() {
  execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'idp-embedded-bench-'));
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  try {
    const first = await start(dataDir, port);
    const firstRest = await atRest(first.child.pid!);
    await stop(first.child);

    // Service clients for the load, written while the service is stopped (PGlite is one process).
    const clientCount = Math.ceil((3_000 * (seconds * 2 + 2)) / 20);
    const handle = await openDatabase({ pgliteDataDir: path.join(dataDir, 'pgdata') });
    const clients: string[] = [];
    for (let index = 0; index < clientCount; index++) {
      const { client, clientSecret } = await createClient(handle.db, {
        name: `embedded bench ${index}`,
        type: 'confidential',
        grantTypes: ['client_credentials'],
        scopes: ['service:crm.aggregates.read'],
      });
      clients.push(basic(client.clientId, clientSecret!));
    }
    await handle.close();

    const reopen = await start(dataDir, port);
    const pid = reopen.child.pid!;
    const reopenRest = await atRest(pid);
    let peak = residentMegabytes(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, residentMegabytes(pid))), 100);
    let next = 0;
    const roundRobin = () => clients[next++ % clients.length]!;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const tokenResponse = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { ...form, authorization: roundRobin() },
      body: 'grant_type=client_credentials',
    });
    const { access_token: accessToken } = (await tokenResponse.json()) as { access_token: string };
    const figures: string[] = [];
    const scenarios = [
      { name: 'discovery', path: '/.well-known/openid-configuration', body: undefined },
      { name: 'JWKS', path: '/.well-known/jwks.json', body: undefined },
      { name: 'client_credentials', path: '/oauth/token', body: 'grant_type=client_credentials' },
      { name: 'introspection', path: '/oauth/introspect', body: `token=${accessToken}` },
    ];
    for (const scenario of scenarios) {
      const result = await autocannon({
        url: `${issuer}${scenario.path}`,
        connections,
        duration: scenario.body ? seconds : Math.max(2, seconds / 4),
        requests: [
          scenario.body
            ? {
                method: 'POST',
                body: scenario.body,
                setupRequest: (request) => ({
                  ...request,
                  headers: { ...form, authorization: roundRobin() },
                }),
              }
            : { method: 'GET' },
        ],
      });
      figures.push(
        `${scenario.name} ${Math.round(result.requests.average)} req/s (${result.non2xx + result.errors} errors)`,
      );
    }
    clearInterval(sampler);
    const afterLoad = await atRest(pid);
    await stop(reopen.child);

    console.log(`\nembedded (PGlite), under load: ${figures.join(', ')}`);
    const rows: FloorRatio[] = [
      atMost(
        'embedded: first start to discovery',
        first.startMs / 1000,
        3,
        `fresh data directory; ${(first.cpuMs / 1000).toFixed(1)} s of CPU`,
        ' s',
      ),
      atMost('embedded: resident memory at rest, first start', firstRest, 300, 'RSS 3 s after start', ' MB'),
      atMost(
        'embedded: resident memory at rest, reopen',
        reopenRest,
        300,
        `reopen took ${(reopen.startMs / 1000).toFixed(1)} s (${(reopen.cpuMs / 1000).toFixed(1)} s of CPU)`,
        ' MB',
      ),
      atMost(
        'embedded: peak resident memory under load',
        peak,
        300,
        `after load, at rest: ${Math.round(afterLoad)} MB`,
        ' MB',
      ),
    ];
    reportRatios(rows);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
