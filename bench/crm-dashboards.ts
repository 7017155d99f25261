// Benchmark: latency of the management dashboards over a million crm facts (7 years of simulated
// history), through HTTP with a main-auth token, as the dashboard page calls them.
// Needs DATABASE_URL (a scratch database is created and dropped).
// npm run bench:crm   (BENCH_CRM_FACTS, BENCH_CRM_REQUESTS)
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import knex from 'knex';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { insertSession } from '../src/identity/sessions/sessions.js';
import { insertUser } from '../src/identity/users/user.js';
import { generateRsaPrivateKeyPem } from '../src/keys/development-secrets.js';
import { createLogger } from '../src/logger.js';
import { crmEntities, crmMessageTypes, isCrmMessageType } from '../src/management/crm-contract/crm-events.js';
import { generateCrmHistory } from '../src/management/crm-simulator/crm-world.js';
import { upsertRecords, type CrmRecord } from '../src/management/records/crm-records-repository.js';
import { applyTotalChanges } from '../src/management/records/daily-totals-repository.js';
import {
  addContributions,
  contributionsOf,
  type Contribution,
} from '../src/management/records/record-contributions.js';
import { createIdentityService } from '../src/service.js';
import { issueMainAuthAccessToken } from '../src/tokens/main-auth-access-token.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('Set DATABASE_URL (PostgreSQL).');
  process.exit(2);
}
const targetFacts = Number(process.env.BENCH_CRM_FACTS ?? 1_000_000);
const requests = Number(process.env.BENCH_CRM_REQUESTS ?? 300);

const id = crypto.randomBytes(4).toString('hex');
const admin = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
const name = `bench_dash_${id}`;
await admin.raw(`create database ${name}`);
const url = new URL(databaseUrl);
url.pathname = `/${name}`;
const database = await openDatabase({ databaseUrl: url.toString(), poolMax: 10 });
const logger = createLogger('warn');

/**
 * 7 years of history in 90-day windows (seeded, distinct ids per window); each record kept at its
 * newest version and its contributions summed, as the consumer would have left them.
 */
async function loadFacts(): Promise<number> {
  const start = Date.parse('2019-01-01T00:00:00Z');
  const windows = Math.ceil((7 * 365) / 90);
  // About 1.9 records per lead (deals, invoices, payments... follow a share of them): a little over the target.
  const leadsPerDay = Math.ceil(targetFacts / (windows * 90 * 1.9));
  const totals = new Map<string, Contribution>();
  let facts = 0;
  for (let window = 0; window < windows; window += 1) {
    const history = generateCrmHistory({
      seed: 1000 + window,
      start: new Date(start + window * 90 * 86_400_000).toISOString().slice(0, 10),
      days: 90,
      leadsPerDay,
      teachers: 40,
    });
    const latest = new Map<string, CrmRecord>();
    for (const envelope of history) {
      if (!isCrmMessageType(envelope.messageType)) continue;
      const entity = crmMessageTypes[envelope.messageType].entity;
      const data = envelope.data as Record<string, unknown>;
      const recordId = String(data[crmEntities[entity].naturalKey]);
      const key = `${entity}:${recordId}`;
      const kept = latest.get(key);
      if (kept && kept.version >= Number(data.version)) continue;
      latest.set(key, {
        entity,
        recordId,
        status: String(data.status),
        version: Number(data.version),
        occurredAt: envelope.occurredAt,
        messageId: envelope.messageId,
        data,
      });
    }
    const records = [...latest.values()];
    for (let slice = 0; slice < records.length; slice += 5000) {
      await upsertRecords(database.db, records.slice(slice, slice + 5000), new Date());
    }
    for (const record of records) addContributions(totals, contributionsOf(record.entity, record.data), 1);
    facts += records.length;
    process.stdout.write(`\rloaded ${facts} facts`);
  }
  const rows = [...totals.values()];
  for (let slice = 0; slice < rows.length; slice += 5000) {
    await applyTotalChanges(database.db, rows.slice(slice, slice + 5000));
  }
  process.stdout.write(`, ${rows.length} daily total rows\n`);
  await database.db.raw('analyze');
  return facts;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

try {
  await migrateToLatest(database.db);
  const loadStarted = performance.now();
  const facts = await loadFacts();
  console.log(`load took ${((performance.now() - loadStarted) / 1000).toFixed(0)} s`);

  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const config = loadConfig({
    NODE_ENV: 'test',
    ISSUER: `http://127.0.0.1:${port}`,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    DATABASE_URL: url.toString(),
    DATA_DIR: '/nonexistent-bench',
  });
  const service = await createIdentityService({
    config,
    database,
    logger,
    clock: systemClock,
    secrets: {
      oidcPrivateKey: generateRsaPrivateKeyPem(),
      mainAuthPrivateKey: generateRsaPrivateKeyPem(),
      cookieKeys: ['bench-cookie-key-0123456789abcdefghijklmnopqrstuvwxyz'],
    },
  });
  server.on('request', service.app.callback());
  const now = new Date();
  // A main-auth token is accepted only while its session is live: a real user and session behind it.
  const reader = await insertUser(service.db, { email: `bench-${crypto.randomUUID()}@example.com` });
  const session = await insertSession(
    service.db,
    {
      id: crypto.randomUUID(),
      refreshTokenId: crypto.randomUUID(),
      userId: reader.id,
      userAgent: 'bench',
      ipAddress: '127.0.0.1',
      browserName: '',
      authMethod: 'pwd',
    },
    now,
  );
  const { token } = await issueMainAuthAccessToken(
    service.keys.mainAuth,
    { issuer: config.issuer, audience: config.apiAudience },
    {
      userId: reader.id,
      tokenId: crypto.randomUUID(),
      sessionId: session.id,
      authMethod: 'pwd',
      authTime: now,
      roles: [],
      permissions: ['management.dashboards.read.finance'],
    },
    now,
  );

  // Periods as people ask for them: a month, a quarter, a year, anywhere in the 7 years.
  const randomPeriod = () => {
    const days = [31, 92, 366][crypto.randomInt(3)]!;
    const from = Date.parse('2019-01-01T00:00:00Z') + crypto.randomInt(7 * 365 - days) * 86_400_000;
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    return `?from=${day(from)}&to=${day(from + days * 86_400_000)}`;
  };
  const results: Record<string, unknown> = {};
  for (const endpoint of ['finance', 'marketing', 'sales']) {
    const latencies: number[] = [];
    for (let index = 0; index < requests + 20; index += 1) {
      const started = performance.now();
      const response = await fetch(
        `${config.issuer}/api/v2/management/dashboards/${endpoint}${randomPeriod()}`,
        {
          headers: { authorization: `Bearer ${token}` },
        },
      );
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`${endpoint} answered ${response.status}`);
      if (index >= 20) latencies.push(performance.now() - started);
    }
    latencies.sort((a, b) => a - b);
    results[endpoint] = {
      requests: latencies.length,
      p50: Number(percentile(latencies, 50).toFixed(1)),
      p95: Number(percentile(latencies, 95).toFixed(1)),
      p99: Number(percentile(latencies, 99).toFixed(1)),
      max: Number(latencies.at(-1)!.toFixed(1)),
    };
  }
  const { rows } = await database.db.raw(
    `select (select count(*)::int from crm_records) as facts, (select count(*)::int from crm_daily_totals) as totals`,
  );
  console.log(
    JSON.stringify(
      {
        machine: `${os.cpus().length} × ${os.cpus()[0]?.model}`,
        loadAverage: os.loadavg().map((value) => Number(value.toFixed(1))),
        facts,
        ...rows[0],
        latencyMs: results,
      },
      null,
      2,
    ),
  );
  server.closeAllConnections();
  server.close();
  await service.close();
} finally {
  await database.close();
  await admin.raw(`drop database if exists ${name} with (force)`);
  await admin.destroy();
}
