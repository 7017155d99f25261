// Benchmark: GET /api/v2/platform/reference/subjects with 1,000 subjects on PostgreSQL (DATABASE_URL),
// the service in a child process, autocannon here. npm run bench:platform
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import knex from 'knex';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { freePort } from '../test/support/free-port.js';
import { atLeast, formatNumber, median, reportRatios } from './support/floor-ratios.js';
import { startScript } from './support/production-service.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('Set DATABASE_URL (a PostgreSQL server; a scratch database is created and dropped).');
  process.exit(2);
}
const duration = Number(process.env.BENCH_DURATION ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const subjectCount = 1000;

const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
const name = `bench_platform_${crypto.randomBytes(4).toString('hex')}`;
await admin.raw(`create database ${name}`);
const url = new URL(databaseUrl);
url.pathname = `/${name}`;

let server: ReturnType<typeof spawn> | undefined;
try {
  const database = await openDatabase({ databaseUrl: url.toString() });
  await migrateToLatest(database.db);
  // 50 top-level subjects with 19 children each: 1,000 entries, two locales, a description.
  const rows = Array.from({ length: subjectCount }, (_, index) => {
    const number = String(index + 1).padStart(4, '0');
    return {
      entity: 'subject',
      key: `subject_${number}`,
      title: JSON.stringify({ en: `Subject ${number}`, ru: `Предмет ${number}` }),
      description: JSON.stringify({ en: `What subject ${number} covers, in one sentence.` }),
      parent_key: index < 50 ? null : `subject_${String((index % 50) + 1).padStart(4, '0')}`,
      display_order: index,
    };
  });
  await database.db('reference_data_entries').insert(rows.slice(0, 50));
  await database.db.batchInsert('reference_data_entries', rows.slice(50), 200);
  await database.close();

  const port = await freePort();
  // The service as it runs in production: compiled, with npm start's flags and environment.
  execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
  const start = startScript();
  server = spawn(
    process.execPath,
    [
      ...start.nodeFlags,
      // e.g. BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the server
      ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      fileURLToPath(new URL('../dist/bench/platform-bench-server.js', import.meta.url)),
    ],
    {
      env: { ...process.env, ...start.environment, DATABASE_URL: url.toString(), PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const { url: base, token, bareUrl } = await firstLine(server);
  const target = `${base}/api/v2/platform/reference/subjects`;
  const first = await fetch(target, { headers: { authorization: `Bearer ${token}` } });
  const body = await first.text();
  const etag = first.headers.get('etag')!;
  const items = (JSON.parse(body) as { items: unknown[] }).items.length;
  console.log(`GET /subjects: ${items} entries, ${Buffer.byteLength(body)} bytes of JSON`);

  const auth = { authorization: `Bearer ${token}` };
  const scenarios: { name: string; url: string; headers: Record<string, string> }[] = [
    { name: 'gzip (Accept-Encoding: gzip)', url: target, headers: { ...auth, 'accept-encoding': 'gzip' } },
    { name: 'uncompressed JSON', url: target, headers: auth },
    {
      name: 'revalidation (If-None-Match → 304)',
      url: target,
      headers: { ...auth, 'accept-encoding': 'gzip', 'if-none-match': etag },
    },
    {
      name: 'ceiling: bare node:http, same gzip bytes',
      url: bareUrl,
      headers: { 'accept-encoding': 'gzip' },
    },
    { name: 'ceiling: bare node:http, 304', url: bareUrl, headers: { 'if-none-match': etag } },
  ];
  const drive = async (scenario: (typeof scenarios)[number]) => {
    const result = await autocannon({ url: scenario.url, connections, duration, headers: scenario.headers });
    return {
      scenario: scenario.name,
      'req/s': Math.round(result.requests.average),
      'p50 ms': result.latency.p50,
      'p99 ms': result.latency.p99,
      'MB/s': (result.throughput.average / 1e6).toFixed(1),
      errors: result.errors + result.non2xx - (scenario.headers['if-none-match'] ? result['3xx'] : 0),
    };
  };
  const results = [];
  // BENCH_SCENARIOS=gzip,304 runs the scenarios whose names contain one of these words.
  const only = process.env.BENCH_SCENARIOS?.split(',');
  for (const scenario of scenarios.filter(
    (candidate) => !only || only.some((word) => candidate.name.includes(word)),
  )) {
    results.push(await drive(scenario));
  }
  // The target is a ratio to the bare server in the same minutes: gzip and its ceiling alternate for
  // BENCH_ROUNDS rounds (the first pair above is round 1), the ratio taken within each round.
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const gzip = scenarios[0]!;
  const ceiling = scenarios[3]!;
  const pairs: [number, number][] = [];
  const firstPair = [
    results.find((row) => row.scenario === gzip.name),
    results.find((row) => row.scenario === ceiling.name),
  ];
  if (firstPair[0] && firstPair[1]) pairs.push([firstPair[0]['req/s'], firstPair[1]['req/s']]);
  while (pairs.length < rounds) pairs.push([(await drive(gzip))['req/s'], (await drive(ceiling))['req/s']]);
  console.log(
    `\n${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores (${os.cpus()[0]?.model}), load ${os
      .loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')}, ${connections} connections, ${duration} s each`,
  );
  console.table(results);
  const ratios = pairs.map(([ours, bare]) => ours / bare);
  reportRatios([
    atLeast(
      'GET /subjects (1,000, gzip) ÷ bare node:http, same bytes',
      median(ratios),
      0.75,
      `${formatNumber(median(pairs.map(([ours]) => ours)))} vs ${formatNumber(median(pairs.map(([, bare]) => bare)))} req/s; rounds ${ratios.map((ratio) => ratio.toFixed(2)).join(' / ')}`,
    ),
  ]);
} finally {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.on('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  await admin.raw(`drop database if exists ${name} with (force)`);
  await admin.destroy();
}

function firstLine(
  child: ReturnType<typeof spawn>,
): Promise<{ url: string; token: string; bareUrl: string }> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    // The server's log lines come first; its address line is the one naming bareUrl.
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((candidate) => candidate.includes('"bareUrl"'));
      if (line) resolve(JSON.parse(line));
    });
    child.on('exit', (code) => reject(new Error(`the benchmark server exited (${code})`)));
  });
}
