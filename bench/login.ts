/**
 * Login benchmark: the full main-auth login through the auth-flow API (flow start → identifier →
 * password → tokens) against the service on real PostgreSQL.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:login
 *
 * Options (environment): BENCH_SECONDS (20), BENCH_CONCURRENCY (16), BENCH_USERS (1024), BENCH_WARMUP_SECONDS (3).
 *
 * It creates a scratch database next to DATABASE_URL's, runs `src/main.ts` on it as a child process
 * (the server gets its own process, as in production; this process only drives load), creates users,
 * then keeps BENCH_CONCURRENCY logins in flight for BENCH_SECONDS and prints logins/s and latency
 * percentiles as JSON. Each login comes from its own client address (X-Forwarded-For with
 * TRUST_PROXY=true), as real users do, so the per-IP limits of the flow endpoints don't cap the run.
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import knex from 'knex';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { hashPassword, verifyPassword } from '../src/identity/passwords/password-hash.js';
import { settledWorkCounters, workPerRequest } from './support/database-work.js';
import { productionSecrets, startScript } from './support/production-service.js';
import { startSmtpSink } from './support/smtp-sink.js';
import { atLeast, reportRatios } from './support/floor-ratios.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
// Enough that no user signs in more than a few times in a run: each login is a new device, and its
// notice is part of what a login costs; a user is sent at most five an hour (notice-budget.ts).
const userCount = Number(process.env.BENCH_USERS ?? 1024);
const password = 'benchmark passphrase 2026';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl?.startsWith('postgres')) {
  console.error('The login benchmark runs on PostgreSQL: set DATABASE_URL=postgres://...');
  process.exit(2);
}

const scratchName = `idp_bench_${process.pid}`;
const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
const scratchUrl = new URL(databaseUrl);
scratchUrl.pathname = `/${scratchName}`;

async function prepareDatabase(): Promise<string[]> {
  await admin.raw(`drop database if exists ${scratchName}`);
  await admin.raw(`create database ${scratchName}`);
  const handle = await openDatabase({ databaseUrl: scratchUrl.toString(), poolMax: 2 });
  await migrateToLatest(handle.db);
  // One hash for all: every login still verifies a full-cost argon2id hash.
  const hash = await hashPassword(password);
  const emails = Array.from({ length: userCount }, (_, index) => `bench-${index}@example.com`);
  const users: { id: string }[] = await handle.db('users').insert(
    emails.map((email) => ({ email, email_verified: true })),
    ['id'],
  );
  await handle
    .db('user_credentials')
    .insert(users.map((user) => ({ user_id: user.id, type: 'password', secret_hash: hash })));
  await handle.close();
  return emails;
}

async function startServer(port: number, dataDir: string, smtpUrl: string) {
  // BENCH_CPU_PROF=<dir>: the service writes a V8 CPU profile there when it stops.
  const profile = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF]
    : [];
  // The service as it runs in production: compiled, as npm start runs it.
  execFileSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' });
  const start = startScript(path.join(root, 'package.json'));
  const child = spawn(process.execPath, [...start.nodeFlags, ...profile, 'dist/src/main.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...(process.env.UV_THREADPOOL_SIZE ? { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE } : {}),
      DATABASE_URL: scratchUrl.toString(),
      PORT: String(port),
      HOST: '127.0.0.1',
      ISSUER: `http://127.0.0.1:${port}`,
      DATA_DIR: dataDir,
      TRUST_PROXY: 'true',
      LOG_LEVEL: 'warn',
      // Production wants a real transport: a login from a new device (every login here) notifies the
      // user by email, as in production, through a relay that accepts everything (bench/support/smtp-sink.ts).
      ...productionSecrets(smtpUrl),
      ...start.environment,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 1200; attempt++) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/.well-known/openid-configuration`)).ok) return { child, base };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGTERM');
  throw new Error('the service did not start within 120 s');
}

/**
 * The load generator shares the cores with the service: node:http with kept-alive connections, not
 * fetch (undici's fetch cost ~7 ms of CPU per login here, as much as a sixth of an argon2id check).
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function post(base: string, route: string, body: unknown, ip: string): Promise<Record<string, unknown>> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${base}/api/v2/identity${route}`,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'x-forwarded-for': ip,
          'user-agent': 'login-bench',
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (response.statusCode !== 200) reject(new Error(`${route}: ${response.statusCode} ${text}`));
          else resolve(JSON.parse(text) as Record<string, unknown>);
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

let loginCounter = 0;
async function login(base: string, email: string): Promise<void> {
  const n = loginCounter++;
  const ip = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
  const started = await post(base, '/auth/flow/start', { flow: 'login' }, ip);
  const identified = await post(
    base,
    '/auth/flow/step',
    { sessionId: started.sessionId, step: 'phone-email', input: { identifier: email } },
    ip,
  );
  const done = await post(
    base,
    '/auth/flow/step',
    { sessionId: identified.sessionId, step: 'password', input: { password } },
    ip,
  );
  if (done.status !== 'completed' || typeof done.accessToken !== 'string') {
    throw new Error(`login did not complete: ${JSON.stringify(done)}`);
  }
}

/**
 * CPU seconds (user + system, all threads) the process has used so far, from /proc (Linux); with
 * `mainThread`, only its main thread's: the one JavaScript runs on (argon2id and the RSA signatures run
 * on libuv's thread pool, garbage collection partly on V8's helper threads).
 */
async function cpuSecondsOf(pid: number, mainThread = false): Promise<number | undefined> {
  try {
    const stat = await fs.readFile(
      mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`,
      'utf8',
    );
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the stat line (12 and 13 after the command name).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** The process's peak resident memory so far and its resident memory now, in MB (Linux). */
async function residentMemoryMb(pid: number): Promise<{ peak: number; now: number } | undefined> {
  try {
    const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
    const kilobytes = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { peak: Math.round(kilobytes('VmHWM') / 1024), now: Math.round(kilobytes('VmRSS') / 1024) };
  } catch {
    return undefined;
  }
}

/** CPU seconds so far of each PostgreSQL backend connected to the scratch database. */
async function databaseCpuSeconds(): Promise<Map<string, number>> {
  const { rows } = await admin.raw<{ rows: { pid: number }[] }>(
    'select pid from pg_stat_activity where datname = ? and pid <> pg_backend_pid()',
    [scratchName],
  );
  const seconds = new Map<string, number>();
  for (const { pid } of rows) seconds.set(String(pid), (await cpuSecondsOf(pid)) ?? 0);
  return seconds;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function run(base: string, emails: string[], durationMs: number) {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const deadline = performance.now() + durationMs;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const email = emails[next++ % emails.length]!;
        const began = performance.now();
        try {
          await login(base, email);
          latencies.push(performance.now() - began);
        } catch (error) {
          errors++;
          firstError ??= (error as Error).message;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { latencies, errors, firstError };
}

/**
 * CPU milliseconds of one argon2id verification (the service's parameters) on this machine right now:
 * the floor of a login's cost, measured beside the run so a disturbed machine shows in the figures.
 */
async function argon2VerifyCpuMs(): Promise<number> {
  const hash = await hashPassword(password);
  const before = process.cpuUsage();
  for (let index = 0; index < 20; index++) await verifyPassword(hash, password);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / 20;
}

/**
 * Verifications per second with every core verifying at once and nothing else running: what the bound
 * (cores × 1000 / one verification's ms) assumes the cores can do. Two vCPUs of a VM are often two
 * hyperthreads of one core, and argon2id is bound by memory bandwidth, so this can be well below it.
 */
async function argon2AllCoresPerSecond(cores: number): Promise<number> {
  const hash = await hashPassword(password);
  const perCore = 10;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: cores }, async () => {
      for (let index = 0; index < perCore; index++) await verifyPassword(hash, password);
    }),
  );
  return (cores * perCore * 1000) / (performance.now() - began);
}

async function main() {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'idp-bench-'));
  const emails = await prepareDatabase();
  const port = 20000 + crypto.randomInt(20000);
  const smtp = await startSmtpSink();
  const { child, base } = await startServer(port, dataDir, smtp.url);
  try {
    await run(base, emails, warmupSeconds * 1000);
    const workBefore = await settledWorkCounters(scratchUrl.toString());
    const began = performance.now();
    const cpuBefore = await cpuSecondsOf(child.pid!);
    const javaScriptBefore = await cpuSecondsOf(child.pid!, true);
    const databaseBefore = await databaseCpuSeconds();
    const driverBefore = process.cpuUsage();
    const { latencies, errors, firstError } = await run(base, emails, seconds * 1000);
    const elapsed = (performance.now() - began) / 1000;
    const driver = process.cpuUsage(driverBefore);
    const cpuAfter = await cpuSecondsOf(child.pid!);
    const javaScriptAfter = await cpuSecondsOf(child.pid!, true);
    const databaseAfter = await databaseCpuSeconds();
    const work = workPerRequest(
      workBefore,
      await settledWorkCounters(scratchUrl.toString()),
      latencies.length,
    );
    // What one login costs the service process, whatever else runs on the machine: the capacity
    // of the cores it would have to itself (PostgreSQL's own CPU is not included).
    const cpuPerLogin =
      cpuBefore !== undefined && cpuAfter !== undefined && latencies.length > 0
        ? (cpuAfter - cpuBefore) / latencies.length
        : undefined;
    // Resident memory: the peak of the whole run, and at rest two seconds after the logins stopped
    // (what the allocator kept of argon2id's 19 MiB blocks, see README "Running it elsewhere").
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const memory = await residentMemoryMb(child.pid!);
    const argon2Ms = await argon2VerifyCpuMs();
    const perLoginMs = (seconds: number) =>
      Number(((seconds * 1000) / Math.max(1, latencies.length)).toFixed(1));
    let databaseSeconds = 0;
    for (const [pid, after] of databaseAfter) databaseSeconds += after - (databaseBefore.get(pid) ?? 0);
    // Where a login's CPU goes, all of it on the same cores: the bound assumes argon2id alone.
    const breakdown = {
      argon2idVerify: Number(argon2Ms.toFixed(1)),
      serviceBesideArgon2: cpuPerLogin ? Number((cpuPerLogin * 1000 - argon2Ms).toFixed(1)) : undefined,
      postgresql: perLoginMs(databaseSeconds),
      loadGenerator: perLoginMs((driver.user + driver.system) / 1e6),
    };
    const loginsPerSecond = latencies.length / elapsed;
    const cores = os.cpus().length;
    const bound = (cores * 1000) / argon2Ms;
    const allCores = await argon2AllCoresPerSecond(cores);
    const result = {
      benchmark: 'main-auth login: flow start → identifier → password → tokens',
      database: 'postgresql',
      date: new Date().toISOString(),
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      node: process.version,
      concurrency,
      seconds: Number(elapsed.toFixed(1)),
      logins: latencies.length,
      loginsPerSecond: Number((latencies.length / elapsed).toFixed(1)),
      errors,
      ...(firstError ? { firstError } : {}),
      latencyMs: {
        p50: Math.round(percentile(latencies, 50)),
        p95: Math.round(percentile(latencies, 95)),
        p99: Math.round(percentile(latencies, 99)),
        max: Math.round(latencies.at(-1) ?? 0),
      },
      ...(cpuPerLogin
        ? {
            serviceCpuMsPerLogin: Number((cpuPerLogin * 1000).toFixed(1)),
            serviceLoginsPerCpuSecond: Number((1 / cpuPerLogin).toFixed(1)),
          }
        : {}),
      serviceResidentMemoryMb: memory,
      argon2VerifyCpuMs: Number(argon2Ms.toFixed(1)),
      argon2Bound: Number(bound.toFixed(1)),
      argon2AllCoresPerSecond: Number(allCores.toFixed(1)),
      cpuMsPerLogin: breakdown,
      // Of the service's CPU, its JavaScript thread's: routes, queries, JSON, the engine (not argon2id).
      serviceJavaScriptThreadCpuMsPerLogin:
        javaScriptBefore !== undefined && javaScriptAfter !== undefined
          ? perLoginMs(javaScriptAfter - javaScriptBefore)
          : undefined,
      databaseWorkPerLogin: work,
      // New-device notifications the relay accepted (one per login: every login is from a new device).
      notificationsSent: smtp.messages(),
      uvThreadpoolSize: Number(process.env.UV_THREADPOOL_SIZE ?? 4),
      loadAverage: os.loadavg().map((value) => Number(value.toFixed(2))),
    };
    console.log(JSON.stringify(result, null, 2));
    const spent = Object.values(breakdown).reduce<number>((sum, value) => sum + (value ?? 0), 0);
    reportRatios([
      atLeast(
        'full logins ÷ argon2id bound (cores × 1000 / argon2 ms)',
        loginsPerSecond / bound,
        0.85,
        `${loginsPerSecond.toFixed(1)} vs ${bound.toFixed(1)}/s (${cores} × 1000 / ${argon2Ms.toFixed(1)} ms); CPU per login: argon2id ${breakdown.argon2idVerify}, rest of service ${breakdown.serviceBesideArgon2 ?? '?'}, PostgreSQL ${breakdown.postgresql}, load generator ${breakdown.loadGenerator} ms (sum ${spent.toFixed(1)}: ${((cores * 1000) / spent).toFixed(1)}/s at most); argon2id alone on all cores at once: ${allCores.toFixed(1)}/s`,
      ),
    ]);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    smtp.close();
    await admin.raw(`drop database if exists ${scratchName} with (force)`);
    await admin.destroy();
    await fs.rm(dataDir, { recursive: true, force: true });
  }
}

await main();
