import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsTable } from '../../src/db/migrate.js';
import { createLogger } from '../../src/logger.js';
import { checkReadiness } from '../../src/operations/health-routes.js';
import { createServiceClient, createTestUser } from '../support/fixtures.js';
import { discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

/** What the service logs, one parsed JSON object per line. */
const lines: Record<string, unknown>[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
    done();
  },
});

const metricsToken = 'metrics-token-0123456789abcdefghijklmnopqrstuvwxyz';
let service: TestService;
beforeAll(async () => {
  service = await startTestService({
    env: { TRUST_PROXY: 'true', METRICS_TOKEN: metricsToken },
    logger: createLogger('info', logStream),
  });
});
afterAll(() => service?.close());

async function scrape(): Promise<string> {
  const response = await fetch(service.url('/metrics'), {
    headers: { authorization: `Bearer ${metricsToken}` },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  return response.text();
}

/** The value of one sample, e.g. sample(text, 'identity_logins_total{outcome="failed"}'). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe('health and readiness', () => {
  it('/healthz answers while the process runs; /readyz checks database, migrations and event bus', async () => {
    const health = await fetch(service.url('/healthz'));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(service.url('/readyz'));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { database: 'ok', migrations: 'ok', eventBus: 'ok' },
    });
  });

  it('/readyz answers 503 naming a migration the database lacks', async () => {
    const { db } = service.service;
    const last = await db(migrationsTable).orderBy('id', 'desc').first();
    await db(migrationsTable).where({ id: last.id }).delete();
    try {
      const answer = await fetch(service.url('/readyz'));
      expect(answer.status).toBe(503);
      const body = (await answer.json()) as { status: string; checks: Record<string, string> };
      expect(body.status).toBe('not_ready');
      expect(body.checks.migrations).toBe(`pending: ${last.name}`);
      expect(body.checks.database).toBe('ok');
    } finally {
      await db(migrationsTable).insert(last);
    }
    expect((await fetch(service.url('/readyz'))).status).toBe(200);
  });

  it('/readyz reads which migrations ran without writing: a database never migrated stays untouched', async () => {
    const { db } = service.service;
    await db.raw('alter table ?? rename to ??', [migrationsTable, 'readyz_test_migrations']);
    try {
      const answer = await fetch(service.url('/readyz'));
      expect(answer.status).toBe(503);
      const body = (await answer.json()) as { checks: Record<string, string> };
      expect(body.checks.migrations).toMatch(/^pending: 20261121000100_identity_foundation, /);
      // A readiness probe is read-only: it must not create the migrations table (a database user of a
      // replica, or without CREATE, would see every probe fail; knex's own list creates it).
      expect(await db.schema.hasTable(migrationsTable)).toBe(false);
    } finally {
      await db.schema.dropTableIfExists(migrationsTable);
      await db.raw('alter table ?? rename to ??', ['readyz_test_migrations', migrationsTable]);
    }
    expect((await fetch(service.url('/readyz'))).status).toBe(200);
  });

  it('is not ready while the event bus is disconnected', async () => {
    const { db, events } = service.service;
    const disconnected = Object.assign(Object.create(events.bus) as typeof events.bus, {
      connected: () => false,
    });
    expect(await checkReadiness({ db, bus: disconnected })).toMatchObject({
      database: 'ok',
      eventBus: 'disconnected',
    });
  });
});

describe('request ids', () => {
  it('answers with an X-Request-Id, keeps a sane one the caller sent, replaces an odd one', async () => {
    const generated = await fetch(service.url('/healthz'));
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await fetch(service.url('/healthz'), { headers: { 'x-request-id': 'lb-7f3a.42' } });
    expect(kept.headers.get('x-request-id')).toBe('lb-7f3a.42');
    const odd = await fetch(service.url('/healthz'), { headers: { 'x-request-id': 'a b<script>' } });
    expect(odd.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('puts the id in JSON error bodies, OAuth error bodies, and the log lines of the request', async () => {
    const api = await fetch(service.url('/api/v2/no-such-api'));
    expect(api.status).toBe(404);
    expect(await api.json()).toMatchObject({
      error: 'not_found',
      request_id: api.headers.get('x-request-id'),
    });

    const oauth = await fetch(service.url('/oauth/token'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': randomIp() },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'x'.repeat(400) }),
    });
    const requestId = oauth.headers.get('x-request-id');
    expect(await oauth.json()).toMatchObject({ error: 'invalid_client', request_id: requestId });
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'invalid_client_id', requestId }));
  });
});

describe('metrics', () => {
  it('are served with the metrics token only', async () => {
    expect((await fetch(service.url('/metrics'))).status).toBe(401);
    const wrong = await fetch(service.url('/metrics'), { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('Bearer');
  });

  it('count requests by route and status, and time them', async () => {
    const before = await scrape();
    const series = 'identity_http_requests_total{method="GET",route="/healthz",status="200"}';
    await fetch(service.url('/healthz'));
    await fetch(service.url(`/random-${Date.now()}`));
    const after = await scrape();
    expect(sample(after, series)).toBe(sample(before, series) + 1);
    expect(after).toContain(
      'identity_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/healthz"}',
    );
    expect(after).not.toContain('/random-');
    expect(after).toContain('route="unmatched"');
  });

  it('count logins by outcome, lockouts and tokens issued by grant', async () => {
    const client = new IdentityClient(service);
    const user = await createTestUser(service.service.db);
    const before = await scrape();
    await client.login(user.email!, user.password);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    expect((await client.step(identified.sessionId, 'password', { password: 'wrong' }, { ip })).status).toBe(
      401,
    );

    const { client: serviceClient, clientSecret } = await createServiceClient(service.service.db, [
      'service:crm.aggregates.read',
    ]);
    const config = await discover(service.issuer, serviceClient.clientId, clientSecret);
    await oidc.clientCredentialsGrant(config, { scope: 'service:crm.aggregates.read' });

    const after = await scrape();
    for (const series of [
      'identity_logins_total{outcome="succeeded"}',
      'identity_logins_total{outcome="failed"}',
      'identity_tokens_issued_total{grant_type="client_credentials"}',
    ]) {
      expect(sample(after, series), series).toBe(sample(before, series) + 1);
    }
    expect(after).toContain('identity_event_outbox_lag_seconds ');
    expect(after).toContain('management_crm_dead_letters ');
    expect(after).toContain('identity_lockouts_total');
  });
});
