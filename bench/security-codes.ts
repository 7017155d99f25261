/**
 * Benchmark of the security area's hot paths, over HTTP against the real service:
 *
 *   forgot       POST /auth/password/forgot   (endpoint limit, 3 code-sending limits, code insert)
 *   verify-code  POST /auth/password/verify-code with a wrong code (limit + one atomic attempt update)
 *   login-guard  the brute-force bookkeeping of one successful login, called directly:
 *                assertLoginAllowed + recordLoginSuccess (3 claims: source ladder, account-wide bound,
 *                IP; their release with the ladder's reset; audit insert)
 *
 * Every request comes from its own IP (X-Forwarded-For) and identifier, so the limits themselves never
 * refuse: the figures are the cost of enforcing them.
 *
 *   npm run bench:security                                   # embedded PGlite
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:security
 *   BENCH_SECONDS=10 BENCH_CONCURRENCY=32 npm run bench:security
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import knex from 'knex';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { requestFrom } from '../src/http/request-info.js';
import { assertLoginAllowed, recordLoginSuccess } from '../src/identity/brute-force/login-protection.js';
import { generateRsaPrivateKeyPem } from '../src/keys/development-secrets.js';
import { createLogger } from '../src/logger.js';
import { createIdentityService } from '../src/service.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);

interface Result {
  name: string;
  requests: number;
  errors: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** Keeps `concurrency` operations in flight for `seconds`; latency percentiles in ms. */
async function load(name: string, operation: (index: number) => Promise<boolean>): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const deadline = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const started = performance.now();
      const ok = await operation(next++).catch(() => false);
      latencies.push(performance.now() - started);
      if (!ok) errors++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (quantile: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * quantile))]!;
  return {
    name,
    requests: latencies.length,
    errors,
    perSecond: Math.round(latencies.length / elapsed),
    p50: Math.round(at(0.5) * 10) / 10,
    p99: Math.round(at(0.99) * 10) / 10,
  };
}

async function openBenchDatabase(): Promise<{ handle: DatabaseHandle; drop: () => Promise<void> }> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    const handle = await openDatabase({});
    await migrateToLatest(handle.db);
    return { handle, drop: () => handle.close() };
  }
  const name = `idp_bench_security_${process.pid}`;
  const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`drop database if exists ${name}`);
  await admin.raw(`create database ${name}`);
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ databaseUrl: url.toString(), poolMax: 20 });
  await migrateToLatest(handle.db);
  return {
    handle,
    async drop() {
      await handle.close();
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    },
  };
}

const randomIp = () => `10.${crypto.randomInt(256)}.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`;

async function main() {
  const { handle, drop } = await openBenchDatabase();
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;
  const config = loadConfig({ NODE_ENV: 'test', ISSUER: issuer, LOG_LEVEL: 'silent', TRUST_PROXY: 'true' });
  const service = await createIdentityService({
    config,
    database: handle,
    logger: createLogger('silent'),
    secrets: {
      oidcPrivateKey: generateRsaPrivateKeyPem(),
      mainAuthPrivateKey: generateRsaPrivateKeyPem(),
      cookieKeys: [crypto.randomBytes(32).toString('base64url')],
    },
  });
  server.on('request', service.app.callback());
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const post = (path: string, body: unknown) =>
    new Promise<number>((resolve, reject) => {
      const request = http.request(
        `${issuer}/api/v2/identity${path}`,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'x-forwarded-for': randomIp() },
        },
        (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        },
      );
      request.on('error', reject);
      request.end(JSON.stringify(body));
    });

  const identifiers: string[] = [];
  const results = [
    await load('forgot', async (index) => {
      const identifier = `bench-${index}-${crypto.randomBytes(3).toString('hex')}@example.com`;
      identifiers.push(identifier);
      return (await post('/auth/password/forgot', { identifier })) === 200;
    }),
    await load(
      'verify-code',
      async (index) =>
        (await post('/auth/password/verify-code', {
          identifier: identifiers[index % identifiers.length],
          code: '000000',
        })) !== 500,
    ),
    await load('login-guard', async () => {
      const userId = crypto.randomUUID();
      const from = requestFrom(randomIp(), 'bench');
      const claim = await assertLoginAllowed({ db: service.db, clock: systemClock }, { userId, ...from });
      await recordLoginSuccess(
        { db: service.db, clock: systemClock },
        { userId, ...from, method: 'password', claim },
      );
      return true;
    }),
  ];

  const cpus = os.cpus();
  console.log(
    JSON.stringify(
      {
        date: new Date().toISOString(),
        database: handle.kind,
        machine: `${cpus.length} × ${cpus[0]?.model ?? 'cpu'}`,
        node: process.version,
        seconds,
        concurrency,
        results,
      },
      null,
      2,
    ),
  );
  agent.destroy();
  server.close();
  await service.close();
  await drop();
}

await main();
