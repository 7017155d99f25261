/**
 * npm run soak: the service under a steady mixed load for SOAK_SECONDS (default 600): logins through the
 * identity API, refresh rotations, client_credentials, introspection and reference-data reads, each at a
 * fixed rate (SOAK_RATE scales them) within the spec's per-client limits. The service runs as `npm start`
 * does, in a process of its own, on PostgreSQL (DATABASE_URL names the server; the soak works in a
 * database of its own, dropped at the end). Every SOAK_WINDOW_SECONDS (default 15) it records the
 * service's resident memory, the p99 latency and the rows of the tables that expire. It fails (exit 1) if:
 * - resident memory grows more than 10% after warm-up (the first fifth of the run, at least 30 s);
 * - p99 latency drifts more than 25% (the last third of the windows against the first third after warm-up);
 * - a table grows without bound: live rows of a table whose records expire within the run keep growing
 *   after their lifetime has passed, or expired rows survive the cleanup job (run once at the end, as
 *   the service does hourly).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import knex from 'knex';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { cleanupExpiredRecords } from '../src/jobs/cleanup-expired-records.js';
import { createClient } from '../src/oidc/models/oauth-client.js';
import { createTestUser, defaultPassword } from '../test/support/fixtures.js';
import { HttpBrowser } from '../test/support/http-browser.js';
import { completeAuthorization, discover } from '../test/support/relying-party.js';
import { productionSecrets, startScript } from './support/production-service.js';
import { startSmtpSink } from './support/smtp-sink.js';

const durationMs = Number(process.env.SOAK_SECONDS ?? 600) * 1_000;
const windowMs = Number(process.env.SOAK_WINDOW_SECONDS ?? 15) * 1_000;
const rateScale = Number(process.env.SOAK_RATE ?? 1);
const warmUpMs = Math.max(30_000, durationMs / 5);
const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  console.error(
    'npm run soak needs DATABASE_URL (a PostgreSQL server; the soak creates its own database there).',
  );
  process.exit(1);
}

/** Tables whose records expire, with the lifetime of the records the load creates (seconds), if the run can see it. */
const expiringTables: { table: string; expiry: string; lifetimeSeconds?: number }[] = [
  { table: 'rate_limits', expiry: `to_timestamp("expire" / 1000.0)`, lifetimeSeconds: 60 },
  { table: 'auth_flow_sessions', expiry: 'expires_at', lifetimeSeconds: 300 },
  { table: 'authorization_codes', expiry: 'expires_at' },
  { table: 'oauth_refresh_tokens', expiry: 'expires_at' },
  { table: 'oidc_payloads', expiry: 'expires_at' },
  { table: 'oauth_revoked_grants', expiry: 'expires_at' },
];

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const form = 'application/x-www-form-urlencoded';

interface Window {
  atMs: number;
  rssMb: number;
  requests: number;
  errors: number;
  p99Ms: number;
  tables: Record<string, { live: number; expired: number }>;
}

function rssMegabytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function main() {
  const name = `idp_soak_${crypto.randomBytes(4).toString('hex')}`;
  const admin = knex({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const url = new URL(adminUrl!);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), poolMax: 2 });
  let child: ChildProcess | undefined;
  let smtp: Awaited<ReturnType<typeof startSmtpSink>> | undefined;
  try {
    await migrateToLatest(database.db);
    const { db } = database;
    const port = 20_000 + crypto.randomInt(20_000);
    const base = `http://127.0.0.1:${port}`;
    // The service as it runs in production: compiled, with npm start's flags and environment.
    smtp = await startSmtpSink();
    execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
    const start = startScript();
    child = spawn(process.execPath, [...start.nodeFlags, 'dist/src/main.js'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        // Production wants a real transport: logins from new devices notify their owners by email.
        ...productionSecrets(smtp.url),
        ...start.environment,
        DATABASE_URL: url.toString(),
        PORT: String(port),
        HOST: '127.0.0.1',
        ISSUER: base,
        DATA_DIR: fs.mkdtempSync(`${os.tmpdir()}/idp-soak-`),
        TRUST_PROXY: 'true',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    for (let attempt = 0; ; attempt++) {
      if (attempt > 600) throw new Error('the service did not start within 60 s');
      const ready = await fetch(`${base}/.well-known/openid-configuration`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    // Fixtures: users, service clients, refresh chains (one confidential client each: 20 token requests a minute).
    const users = await Promise.all(Array.from({ length: 10 }, () => createTestUser(db)));
    const services = await Promise.all(
      Array.from({ length: 20 }, () =>
        createClient(db, {
          name: 'soak service',
          type: 'confidential',
          grantTypes: ['client_credentials'],
          scopes: ['service:crm.aggregates.read'],
        }),
      ),
    );
    const chains: {
      clientId: string;
      secret: string;
      refreshToken: string;
      accessToken: string;
      busy?: boolean;
    }[] = [];
    const browser = new HttpBrowser(base);
    for (let index = 0; index < 10; index++) {
      const { client, clientSecret } = await createClient(db, {
        name: 'soak app',
        type: 'confidential',
        redirectUris: ['http://localhost:8080/callback'],
        scopes: ['openid', 'profile', 'email'],
      });
      const config = await discover(base, client.clientId, clientSecret!);
      const { tokens } = await completeAuthorization(config, browser, {
        identifier: users[0]!.email!,
        password: defaultPassword,
      });
      chains.push({
        clientId: client.clientId,
        secret: clientSecret!,
        refreshToken: tokens.refresh_token!,
        accessToken: tokens.access_token,
      });
    }

    let latencies: number[] = [];
    let errors = 0;
    let loginCount = 0;
    let apiToken = '';
    const timed = async (what: string, request: () => Promise<Response>) => {
      const started = performance.now();
      try {
        const response = await request();
        const body = await response.text();
        latencies.push(performance.now() - started);
        if (response.status !== 200) {
          errors++;
          if (errors <= 5) console.error(`${what}: ${response.status} ${body.slice(0, 200)}`);
          return undefined;
        }
        return JSON.parse(body) as Record<string, unknown>;
      } catch (error) {
        errors++;
        if (errors <= 5) console.error(`${what}: ${(error as Error).message}`);
        return undefined;
      }
    };
    const postJson = (path: string, body: unknown, ip: string) =>
      fetch(`${base}/api/v2/identity${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
        body: JSON.stringify(body),
      });
    const login = async () => {
      const n = loginCount++;
      const ip = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
      const email = users[n % users.length]!.email!;
      const started = await timed('flow start', () => postJson('/auth/flow/start', { flow: 'login' }, ip));
      if (!started) return;
      const identified = await timed('identifier', () =>
        postJson(
          '/auth/flow/step',
          { sessionId: started.sessionId, step: 'phone-email', input: { identifier: email } },
          ip,
        ),
      );
      if (!identified) return;
      const done = await timed('password', () =>
        postJson(
          '/auth/flow/step',
          { sessionId: identified.sessionId, step: 'password', input: { password: defaultPassword } },
          ip,
        ),
      );
      if (done?.accessToken) apiToken = String(done.accessToken);
    };
    await login();

    let serviceTurn = 0;
    let chainTurn = 0;
    const scenarios: { name: string; perSecond: number; run: () => Promise<unknown> }[] = [
      { name: 'login', perSecond: 1, run: login },
      {
        name: 'refresh',
        perSecond: 2.5,
        run: async () => {
          const chain = chains[chainTurn++ % chains.length]!;
          // One rotation at a time per chain: a second one with the same token would be reuse.
          if (chain.busy) return;
          chain.busy = true;
          const body = await timed('refresh', () =>
            fetch(`${base}/oauth/token`, {
              method: 'POST',
              headers: { authorization: basic(chain.clientId, chain.secret), 'content-type': form },
              body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: chain.refreshToken }),
            }),
          );
          if (body) {
            chain.refreshToken = String(body.refresh_token);
            chain.accessToken = String(body.access_token);
          }
          chain.busy = false;
        },
      },
      {
        name: 'client_credentials',
        perSecond: 5,
        run: () => {
          const { client, clientSecret } = services[serviceTurn++ % services.length]!;
          return timed('client_credentials', () =>
            fetch(`${base}/oauth/token`, {
              method: 'POST',
              headers: { authorization: basic(client.clientId, clientSecret!), 'content-type': form },
              body: 'grant_type=client_credentials',
            }),
          );
        },
      },
      {
        name: 'introspection',
        perSecond: 10,
        run: () => {
          const chain = chains[chainTurn % chains.length]!;
          return timed('introspection', () =>
            fetch(`${base}/oauth/introspect`, {
              method: 'POST',
              headers: { authorization: basic(chain.clientId, chain.secret), 'content-type': form },
              body: new URLSearchParams({ token: chain.accessToken }),
            }),
          );
        },
      },
      {
        name: 'reference reads',
        perSecond: 10,
        run: () =>
          timed('reference reads', () =>
            fetch(`${base}/api/v2/platform/reference/subjects`, {
              headers: { authorization: `Bearer ${apiToken}`, 'accept-encoding': 'gzip' },
            }),
          ),
      },
    ];

    const startedAt = Date.now();
    let running = true;
    const loops = scenarios.map(async (scenario) => {
      const intervalMs = 1_000 / (scenario.perSecond * rateScale);
      let next = Date.now();
      const inFlight = new Set<Promise<unknown>>();
      while (running) {
        const request = scenario.run().finally(() => inFlight.delete(request));
        inFlight.add(request);
        next += intervalMs;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
      }
      await Promise.all(inFlight);
    });

    const tableCounts = async (at = new Date()) => {
      const counts: Window['tables'] = {};
      for (const { table, expiry } of expiringTables) {
        const { rows } = (await db.raw(
          `select count(*) filter (where ${expiry} >= ?)::int as live, count(*) filter (where ${expiry} < ?)::int as expired from ${table}`,
          [at, at],
        )) as { rows: { live: number; expired: number }[] };
        counts[table] = rows[0]!;
      }
      return counts;
    };
    const windows: Window[] = [];
    console.log(
      `soak: ${durationMs / 1000} s, windows of ${windowMs / 1000} s, warm-up ${warmUpMs / 1000} s`,
    );
    console.log(
      '   t(s)  RSS(MB)  req/s  errors  p99(ms)  ' + expiringTables.map(({ table }) => table).join('  '),
    );
    while (Date.now() - startedAt < durationMs) {
      await new Promise((resolve) => setTimeout(resolve, windowMs));
      const sorted = latencies.sort((a, b) => a - b);
      const window: Window = {
        atMs: Date.now() - startedAt,
        rssMb: rssMegabytes(child.pid!),
        requests: sorted.length,
        errors,
        p99Ms: sorted[Math.floor(sorted.length * 0.99)] ?? 0,
        tables: await tableCounts(),
      };
      latencies = [];
      errors = 0;
      windows.push(window);
      console.log(
        `${String(Math.round(window.atMs / 1000)).padStart(7)}  ${window.rssMb.toFixed(0).padStart(7)}  ${(window.requests / (windowMs / 1000)).toFixed(0).padStart(5)}  ${String(window.errors).padStart(6)}  ${window.p99Ms.toFixed(1).padStart(7)}  ` +
          expiringTables
            .map(({ table }) => `${window.tables[table]!.live}/${window.tables[table]!.expired}`)
            .join('  '),
      );
    }
    running = false;
    await Promise.all(loops);

    // The verdict.
    const failures: string[] = [];
    const afterWarmUp = windows.filter((window) => window.atMs > warmUpMs);
    if (afterWarmUp.length < 3)
      failures.push('too short: fewer than 3 windows after warm-up (raise SOAK_SECONDS)');
    else {
      const third = Math.max(1, Math.floor(afterWarmUp.length / 3));
      const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      const rssStart = afterWarmUp[0]!.rssMb;
      const rssEnd = median(afterWarmUp.slice(-third).map((window) => window.rssMb));
      const rssGrowth = rssEnd / rssStart - 1;
      console.log(
        `RSS after warm-up ${rssStart.toFixed(0)} MB, at the end ${rssEnd.toFixed(0)} MB: ${(rssGrowth * 100).toFixed(1)}%`,
      );
      if (rssGrowth > 0.1)
        failures.push(`resident memory grew ${(rssGrowth * 100).toFixed(1)}% after warm-up (limit 10%)`);
      const p99Start = median(afterWarmUp.slice(0, third).map((window) => window.p99Ms));
      const p99End = median(afterWarmUp.slice(-third).map((window) => window.p99Ms));
      const drift = p99End / p99Start - 1;
      console.log(
        `p99 first third ${p99Start.toFixed(1)} ms, last third ${p99End.toFixed(1)} ms: ${(drift * 100).toFixed(1)}%`,
      );
      if (drift > 0.25) failures.push(`p99 latency drifted ${(drift * 100).toFixed(1)}% (limit 25%)`);
      for (const { table, lifetimeSeconds } of expiringTables) {
        if (!lifetimeSeconds) continue;
        const settledAt = warmUpMs + 2 * lifetimeSeconds * 1_000;
        const settled = windows.find((window) => window.atMs >= settledAt);
        if (!settled || settled === windows.at(-1)) continue; // the run is too short to see this table settle
        const live = windows.at(-1)!.tables[table]!.live;
        const reference = Math.max(50, settled.tables[table]!.live);
        console.log(
          `${table}: ${settled.tables[table]!.live} live rows at ${Math.round(settled.atMs / 1000)} s, ${live} at the end`,
        );
        if (live > reference * 1.25)
          failures.push(`${table} keeps growing: ${reference} → ${live} live rows`);
      }
    }
    const { db: cleanupDb } = database;
    const cleanedAt = new Date();
    await cleanupExpiredRecords(cleanupDb, cleanedAt);
    const left = await tableCounts(cleanedAt);
    for (const { table } of expiringTables) {
      if (left[table]!.expired > 0)
        failures.push(`${table}: ${left[table]!.expired} expired rows survive the cleanup`);
    }
    const totalErrors = windows.reduce((sum, window) => sum + window.errors, 0);
    const totalRequests = windows.reduce((sum, window) => sum + window.requests, 0);
    console.log(`${totalRequests} requests, ${totalErrors} errors`);
    if (totalErrors > totalRequests * 0.001)
      failures.push(`${totalErrors} errors of ${totalRequests} requests`);
    for (const failure of failures) console.log(`FAIL: ${failure}`);
    if (failures.length === 0)
      console.log('PASS: no memory growth, no latency drift, no table growing without bound');
    process.exitCode = failures.length === 0 ? 0 : 1;
  } finally {
    child?.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    smtp?.close();
    await database.close();
    await admin.raw(`drop database if exists ${name} with (force)`);
    await admin.destroy();
  }
}

await main();
