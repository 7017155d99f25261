/**
 * npm run bench: the OAuth side under load, on real PostgreSQL (DATABASE_URL names the server; the
 * bench works in a database of its own, dropped at the end), with a bare oidc-provider (in-memory
 * adapter) driven the same way as the ceiling. Rate limiting stays on: the load is spread over enough
 * clients that none trips its limit. Prints a markdown table for BENCHMARKS.md.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import autocannon, { type Request as AutocannonRequest } from 'autocannon';
import knex from 'knex';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createClient } from '../src/oidc/models/oauth-client.js';
import { createTestUser } from '../test/support/fixtures.js';
import { freePort } from '../test/support/free-port.js';
import { HttpBrowser } from '../test/support/http-browser.js';
import { completeAuthorization, discover } from '../test/support/relying-party.js';
import { describeWork, settledWorkCounters, workPerRequest } from './support/database-work.js';
import { productionSecrets, startScript } from './support/production-service.js';
import {
  atLeast,
  atMost,
  formatNumber,
  median as medianOf,
  reportRatios,
  type FloorRatio,
} from './support/floor-ratios.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** A fixed request rate (all connections together) instead of as fast as possible: CPU per request unsaturated. */
const rate = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  console.error(
    'npm run bench needs DATABASE_URL (a PostgreSQL server; the bench creates its own database there).',
  );
  process.exit(1);
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** How `npm start` runs the service; BENCH_NODE_OPTIONS replaces its node flags. */
const start = startScript();

/** Starts a JavaScript entry (the built service) or a TypeScript one (through tsx). */
function startProcess(entry: string, env: Record<string, string>, ready: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const nodeOptions = process.env.BENCH_NODE_OPTIONS?.split(' ').filter(Boolean) ?? start.nodeFlags;
    const args = entry.endsWith('.ts') ? ['--import', 'tsx', entry] : [...nodeOptions, entry];
    const child = spawn(process.execPath, args, {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const log =
      process.env.BENCH_SERVER_LOG && entry.includes('main')
        ? fs.createWriteStream(process.env.BENCH_SERVER_LOG)
        : undefined;
    const onData = (chunk: Buffer) => {
      log?.write(chunk);
      output += chunk.toString();
      if (output.includes(ready)) resolve(child);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${entry} exited with ${code}:\n${output}`)));
    setTimeout(() => reject(new Error(`${entry} did not start in 60 s:\n${output}`)), 60_000).unref();
  });
}

/**
 * The memory of the server: its process and, in a cluster, its workers. Summed as PSS (each page
 * shared between processes, such as node's own code, counted once in all); one process alone: its RSS.
 */
function serverMegabytes(pid: number): number {
  const children = fs
    .readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  const field = children.length === 0 ? 'Rss' : 'Pss';
  return (
    [String(pid), ...children]
      .map((member) => {
        const rollup = fs.readFileSync(`/proc/${member}/smaps_rollup`, 'utf8');
        return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
      })
      .reduce((sum, kilobytes) => sum + kilobytes, 0) / 1024
  );
}

/** CPU seconds (user + system) used so far by a process; clock ticks of 1/100 s, as on Linux. */
function cpuSecondsOf(pid: string): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0; // a process that ended between listing and reading
  }
}

/**
 * CPU seconds so far of the server's processes (a cluster's workers included), and of each PostgreSQL
 * backend serving the bench's database: other work on the same server (other databases, other people's
 * tests on a shared machine) is not counted; the shared background processes (WAL writer, checkpointer)
 * are not either.
 */
async function cpuSeconds(
  pid: number,
): Promise<{ server: number; serverJavaScript: number; database: Map<string, number> }> {
  const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
  const processes = [String(pid), ...children.filter(Boolean)];
  const server = processes.reduce((sum, id) => sum + cpuSecondsOf(id), 0);
  // Each process's main thread, the one JavaScript runs on; the rest is libuv's thread pool (RSA
  // signatures, argon2id) and V8's helper threads (garbage collection).
  const serverJavaScript = processes.reduce((sum, id) => sum + cpuSecondsOf(`${id}/task/${id}`), 0);
  const database = new Map<string, number>();
  for (const backend of await benchBackendPids()) database.set(backend, cpuSecondsOf(backend));
  return { server, serverJavaScript, database };
}

/** Set by main(): the pids of the PostgreSQL backends connected to the bench's database. */
let benchBackendPids: () => Promise<string[]> = async () => [];

/** PostgreSQL's CPU over a run: backends alive at its end (one that ended meanwhile is not counted). */
function databaseCpuSeconds(before: Map<string, number>, after: Map<string, number>): number {
  let sum = 0;
  for (const [pid, seconds] of after) sum += seconds - (before.get(pid) ?? 0);
  return sum;
}

interface Scenario {
  name: string;
  target: string;
  url: string;
  requests: AutocannonRequest[];
  pid: number;
}

interface Figure {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  peakRssMb: number;
  /** CPU time per request: the server's processes, and PostgreSQL's (all of its processes). */
  serverCpuMs: number;
  /** Of serverCpuMs, the main threads' (JavaScript): the rest is signatures, hashing and GC threads. */
  serverJavaScriptCpuMs: number;
  databaseCpuMs: number;
  /** What PostgreSQL did per request (round 1 of our scenarios): see bench/support/database-work.ts. */
  databaseWork?: string;
}

/** Set by main(): the bench database's URL, for its statistics (database work per request). */
let benchDatabaseUrl = '';

async function drive(scenario: Scenario, duration = seconds, countWork = false): Promise<Figure> {
  const workBefore = countWork ? await settledWorkCounters(benchDatabaseUrl) : undefined;
  let peak = serverMegabytes(scenario.pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, serverMegabytes(scenario.pid));
  }, 250);
  const cpuBefore = await cpuSeconds(scenario.pid);
  const result = await autocannon({
    url: scenario.url,
    connections,
    duration,
    requests: scenario.requests,
    ...(rate ? { overallRate: rate } : {}),
  });
  clearInterval(sampler);
  const cpuAfter = await cpuSeconds(scenario.pid);
  const databaseWork = workBefore
    ? describeWork(
        workPerRequest(workBefore, await settledWorkCounters(benchDatabaseUrl), result.requests.total),
      )
    : undefined;
  const perRequestMs = (spent: number) =>
    Math.round((spent * 1000 * 100) / Math.max(1, result.requests.total)) / 100;
  return {
    name: scenario.name,
    // Answered successfully: a fast 400 or 429 must not count as throughput.
    requestsPerSecond: Math.round(result['2xx'] / result.duration),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
    peakRssMb: Math.round(peak),
    serverCpuMs: perRequestMs(cpuAfter.server - cpuBefore.server),
    serverJavaScriptCpuMs: perRequestMs(cpuAfter.serverJavaScript - cpuBefore.serverJavaScript),
    databaseCpuMs: perRequestMs(databaseCpuSeconds(cpuBefore.database, cpuAfter.database)),
    ...(databaseWork ? { databaseWork } : {}),
  };
}

const indexes = (count: number) => Array.from({ length: count }, (_, index) => index);

/** Runs `work` for every item, at most `concurrency` at a time. */
async function inParallel<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>) {
  let position = 0;
  const worker = async () => {
    while (position < items.length) await work(items[position++]!);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * The issue's targets as ratios, each taken within a round (our scenario and its ceiling minutes apart at
 * most) and reported as the median over the rounds; CPU per refresh as the median round's.
 */
function floorRatios(runs: Map<string, Figure[]>): FloorRatio[] {
  const find = (prefix: string) => [...runs].find(([name]) => name.startsWith(prefix))?.[1];
  const rows: FloorRatio[] = [];
  const perRound = (ours: Figure[], ceiling: Figure[]) =>
    ours.map((figure, round) => figure.requestsPerSecond / ceiling[round]!.requestsPerSecond);
  const describe = (ours: Figure[], ceiling: Figure[], ratios: number[]) =>
    `${formatNumber(medianOf(ours.map((f) => f.requestsPerSecond)))} vs ${formatNumber(medianOf(ceiling.map((f) => f.requestsPerSecond)))} req/s; rounds ${ratios.map((ratio) => ratio.toFixed(2)).join(' / ')}`;
  const clientCredentials = find('client_credentials');
  const bareClientCredentials = find('bare oidc-provider, client_credentials');
  if (clientCredentials && bareClientCredentials) {
    const ratios = perRound(clientCredentials, bareClientCredentials);
    rows.push(
      atLeast(
        'client_credentials ÷ bare engine',
        medianOf(ratios),
        0.9,
        describe(clientCredentials, bareClientCredentials, ratios),
      ),
    );
  }
  const introspection = find('introspection');
  if (introspection && bareClientCredentials) {
    const ratios = perRound(introspection, bareClientCredentials);
    rows.push(
      atLeast(
        'introspection ÷ bare engine client_credentials',
        medianOf(ratios),
        5,
        describe(introspection, bareClientCredentials, ratios),
      ),
    );
  }
  const refresh = find('refresh_token');
  const bareRefresh = find('bare oidc-provider, refresh_token');
  if (refresh && bareRefresh) {
    const ratios = perRound(refresh, bareRefresh);
    rows.push(
      atLeast(
        'refresh_token ÷ bare engine refresh',
        medianOf(ratios),
        0.5,
        describe(refresh, bareRefresh, ratios),
      ),
    );
  }
  if (refresh) {
    const cpu = refresh.map((figure) => figure.serverCpuMs + figure.databaseCpuMs);
    const middle = refresh[cpu.indexOf([...cpu].sort((a, b) => a - b)[Math.floor(cpu.length / 2)]!)]!;
    rows.push(
      atMost(
        'CPU per refresh, server + PostgreSQL',
        medianOf(cpu),
        1.5,
        `${middle.serverCpuMs} + ${middle.databaseCpuMs} ms (median round); rounds ${cpu.map((value) => value.toFixed(2)).join(' / ')}`,
        ' ms',
      ),
    );
  }
  return rows;
}

/**
 * One refresh_token request of a pool of chains: takes a chain, and puts it back with its rotated token
 * when answered (a chain is never in two requests at once; a failed one is dropped).
 */
function refreshRequest(chains: { clientId: string; refreshToken: string }[]): AutocannonRequest {
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  return {
    method: 'POST',
    setupRequest: (request, context) => {
      const chain = chains.shift();
      if (!chain) return request;
      (context as { clientId?: string }).clientId = chain.clientId;
      return {
        ...request,
        headers: form,
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          client_id: chain.clientId,
          refresh_token: chain.refreshToken,
        }).toString(),
      };
    },
    onResponse: (status, body, context) => {
      if (status === 200) {
        const { refresh_token: refreshToken } = JSON.parse(body) as { refresh_token: string };
        chains.push({ clientId: String((context as { clientId?: string }).clientId), refreshToken });
      }
    },
  };
}

async function main() {
  const database = `idp_bench_${process.pid}`;
  const admin = knex({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${database}`);
  const benchUrl = new URL(adminUrl!);
  benchUrl.pathname = `/${database}`;
  benchDatabaseUrl = benchUrl.toString();
  const handle = await openDatabase({ databaseUrl: benchUrl.toString(), poolMax: 4 });
  await migrateToLatest(handle.db);
  benchBackendPids = async () => {
    const { rows } = await admin.raw<{ rows: { pid: number }[] }>(
      'select pid from pg_stat_activity where datname = ? and pid <> pg_backend_pid()',
      [database],
    );
    return rows.map((row) => String(row.pid));
  };

  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  // The service as it runs in production: compiled, not through the TypeScript loader.
  execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
  const server = await startProcess(
    'dist/src/main.js',
    {
      DATABASE_URL: benchUrl.toString(),
      DATABASE_POOL_MAX: process.env.DATABASE_POOL_MAX ?? '10',
      // npm start's default is one process; HTTP_WORKERS=2 measures a cluster (memory then sums all of it).
      HTTP_WORKERS: process.env.HTTP_WORKERS ?? '1',
      PORT: String(port),
      HOST: '127.0.0.1',
      ISSUER: issuer,
      // Production wants a real transport; nothing is sent during the bench.
      ...productionSecrets('smtp://127.0.0.1:2525'),
      LOG_LEVEL: 'info',
      // As npm start runs it (GLIBC_TUNABLES: argon2id's 19 MiB blocks go back to the system, README).
      ...start.environment,
    },
    'identity service listening',
  );
  const barePort = await freePort();
  const bare = await startProcess('dist/bench/bare-engine.js', { PORT: String(barePort) }, 'listening');

  try {
    // Enough clients that none reaches its limit (token 20/min) at up to 4,000 req/s over all rounds.
    const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
    // BENCH_SERVICE_CLIENTS and BENCH_REFRESH_CHAINS set them (a slow or busy machine needs fewer; every
    // run loses a chain per connection, see the bare engine's below: chains ≥ connections × (rounds + 3)).
    const serviceClientCount = Number(
      process.env.BENCH_SERVICE_CLIENTS ?? Math.ceil((4_000 * (seconds * rounds + 2)) / 20),
    );
    console.error(`creating ${serviceClientCount} service clients...`);
    const serviceClients: string[] = [];
    await inParallel(indexes(serviceClientCount), 4, async (index) => {
      const { client, clientSecret } = await createClient(handle.db, {
        name: `bench service ${index}`,
        type: 'confidential',
        grantTypes: ['client_credentials'],
        scopes: ['service:crm.aggregates.read'],
      });
      serviceClients.push(basic(client.clientId, clientSecret!));
    });

    // Refresh chains: each a user-flow client with a refresh token obtained through the real login.
    const only = process.env.BENCH_ONLY?.split(',');
    const selected = (name: string) => !only || only.some((prefix) => name.startsWith(prefix));
    // Each chain is its own client (the token limit is 20 per client per minute, and the login's code
    // exchange took one): enough for 1,250 req/s, so a faster machine's single round stays under it.
    const chainCount = selected('refresh')
      ? Number(process.env.BENCH_REFRESH_CHAINS ?? Math.ceil((1_250 * (seconds * rounds + 2)) / 19))
      : 1;
    console.error(`signing in ${chainCount} refresh-token chains...`);
    const chains: { clientId: string; refreshToken: string }[] = [];
    let userAccessToken = '';
    const users = await Promise.all(Array.from({ length: 20 }, () => createTestUser(handle.db)));
    await inParallel(indexes(chainCount), 8, async (index) => {
      const user = users[index % users.length]!;
      const { client } = await createClient(handle.db, {
        name: `bench app ${index}`,
        type: 'public',
        redirectUris: ['http://localhost:8080/callback'],
        scopes: ['openid', 'profile', 'email'],
      });
      const config = await discover(issuer, client.clientId);
      const { tokens } = await completeAuthorization(config, new HttpBrowser(issuer), {
        identifier: user.email!,
        password: user.password,
      });
      chains.push({ clientId: client.clientId, refreshToken: tokens.refresh_token! });
      userAccessToken = tokens.access_token;
    });

    // The bare engine has no rate limit: a chain per connection suffices (one request in flight each),
    // but each run ends with a request in flight on every connection whose answer (the rotated token) is
    // never read: that chain is lost, so a spare per connection for every run.
    const minted = await fetch(
      `http://127.0.0.1:${barePort}/bench/refresh-tokens?count=${connections * (rounds + 3)}`,
    );
    const bareChains = ((await minted.json()) as string[]).map((refreshToken) => ({
      clientId: 'bench-app',
      refreshToken,
    }));

    // The tables were empty a minute ago: without fresh statistics the planner picks plans for empty
    // tables (a scan of every Grant instead of the primary key). Autovacuum would analyze them soon.
    await handle.db.raw('analyze');

    // Each node keeps the clients it has built (src/oidc/client-cache.ts); in steady state a service
    // client's token request finds its client built. Every bench client is looked up once before the
    // rounds, at the revocation endpoint (its own budget), as the bare engine's one client is static.
    console.error(`looking up each of the ${serviceClients.length} service clients once...`);
    await inParallel(serviceClients, 16, async (authorization) => {
      const response = await fetch(`${issuer}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
        body: 'token=warm-up',
      });
      if (response.status !== 200) throw new Error(`warm-up revoke answered ${response.status}`);
    });

    let next = 0;
    const roundRobin = () => serviceClients[next++ % serviceClients.length]!;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const scenarios: Scenario[] = [
      {
        name: 'discovery (GET /.well-known/openid-configuration)',
        target: '10,000 req/s',
        url: `${issuer}/.well-known/openid-configuration`,
        requests: [{ method: 'GET' }],
        pid: server.pid!,
      },
      {
        name: 'JWKS (GET /.well-known/jwks.json)',
        target: '10,000 req/s',
        url: `${issuer}/.well-known/jwks.json`,
        requests: [{ method: 'GET' }],
        pid: server.pid!,
      },
      {
        name: 'client_credentials (POST /oauth/token)',
        target: '2,000 req/s and 0.7 × bare',
        url: `${issuer}/oauth/token`,
        requests: [
          {
            method: 'POST',
            body: 'grant_type=client_credentials',
            setupRequest: (request) => ({ ...request, headers: { ...form, authorization: roundRobin() } }),
          },
        ],
        pid: server.pid!,
      },
      {
        name: 'bare oidc-provider, client_credentials (ceiling)',
        target: '',
        url: `http://127.0.0.1:${barePort}/token`,
        requests: [
          {
            method: 'POST',
            body: 'grant_type=client_credentials',
            headers: { ...form, authorization: basic('bench', 'bench-secret-bench-secret-bench-secret') },
          },
        ],
        pid: bare.pid!,
      },
      {
        name: 'introspection of a JWT access token (POST /oauth/introspect)',
        target: '6,000 req/s',
        url: `${issuer}/oauth/introspect`,
        requests: [
          {
            method: 'POST',
            body: `token=${userAccessToken}`,
            setupRequest: (request) => ({ ...request, headers: { ...form, authorization: roundRobin() } }),
          },
        ],
        pid: server.pid!,
      },
      {
        name: 'refresh_token grant (POST /oauth/token)',
        target: '500 req/s; ≤ 1.5 ms CPU and ≥ 0.5 × bare',
        url: `${issuer}/oauth/token`,
        requests: [refreshRequest(chains)],
        pid: server.pid!,
      },
      {
        name: 'bare oidc-provider, refresh_token (ceiling)',
        target: '',
        url: `http://127.0.0.1:${barePort}/token`,
        requests: [refreshRequest(bareChains)],
        pid: bare.pid!,
      },
    ];

    // The machine is a small VM whose speed drifts from minute to minute: every scenario runs in each
    // of several rounds, and the medians are reported. Each bare-engine scenario runs right after ours,
    // and the ratio to this ceiling is taken within each round.
    const chosen = scenarios.filter((candidate) => selected(candidate.name));
    const runs = new Map<string, Figure[]>(chosen.map((scenario) => [scenario.name, []]));
    // Two seconds of each scenario first, not measured (the chains are sized for these too).
    for (const scenario of chosen) await drive(scenario, 2);
    for (let round = 1; round <= rounds; round++) {
      for (const scenario of chosen) {
        console.error(`round ${round}/${rounds}: ${scenario.name}`);
        // Database work per request: counted in the first round, for our service's scenarios.
        runs
          .get(scenario.name)!
          .push(await drive(scenario, seconds, round === 1 && scenario.pid === server.pid));
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    const workers = process.env.HTTP_WORKERS ?? '1';
    console.log(
      `\n${new Date().toISOString().slice(0, 10)} · HTTP_WORKERS=${workers} · ${os.cpus().length} × ${cpu} · ${Math.round(os.totalmem() / 2 ** 30)} GiB · Node ${process.version} · ${connections} connections · median of ${rounds} runs of ${seconds} s\n`,
    );
    console.log(
      '| Scenario | Target | req/s (median) | runs | p50 ms | p99 ms | non-2xx/errors | server peak memory MB | CPU ms/request: server (its JavaScript thread) + PostgreSQL |',
    );
    console.log('|---|---|---:|---|---:|---:|---:|---:|---:|');
    for (const scenario of chosen) {
      const figures = runs.get(scenario.name)!;
      const middle = figures.find(
        (figure) => figure.requestsPerSecond === median(figures.map((f) => f.requestsPerSecond)),
      )!;
      console.log(
        `| ${scenario.name} | ${scenario.target} | ${middle.requestsPerSecond} | ${figures.map((f) => f.requestsPerSecond).join(' / ')} | ${middle.p50} | ${middle.p99} | ${figures.reduce((sum, f) => sum + f.errors, 0)} | ${Math.max(...figures.map((f) => f.peakRssMb))} | ${middle.serverCpuMs} (${middle.serverJavaScriptCpuMs}) + ${middle.databaseCpuMs} |`,
      );
    }
    console.log('\nDatabase work per request (round 1; PostgreSQL statistics of the bench database):\n');
    for (const scenario of chosen) {
      const work = runs.get(scenario.name)![0]?.databaseWork;
      if (work) console.log(`- ${scenario.name}: ${work}`);
    }
    reportRatios(floorRatios(runs));
  } finally {
    server.kill('SIGINT');
    bare.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    await handle.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await admin.raw(`drop database if exists ${database} with (force)`);
    await admin.destroy();
  }
}

await main();
