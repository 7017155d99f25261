import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { insertSession } from '../../src/identity/sessions/sessions.js';
import { signingKeyFromPem } from '../../src/keys/signing-keys.js';
import { createLogger } from '../../src/logger.js';
import { createServiceClient, createTestUser } from '../support/fixtures.js';
import { signMainAuthToken } from '../support/sign-in.js';
import { OwnPostgres } from './support/own-postgres.js';
import { ServiceProcess } from './support/service-process.js';

// The service's PostgreSQL server restarted (a fast shutdown, a few seconds away, started again) while
// requests keep coming. The server is a throwaway cluster of this test's own: the one the other test
// files share is never stopped.
let postgres: OwnPostgres;
let service: ServiceProcess;
let database: DatabaseHandle;
let bearer: string;
const serviceClients: { id: string; secret: string }[] = [];

const databaseTimeoutMs = 1_000;
/** No request may take longer than this, database or not. */
const boundMs = databaseTimeoutMs + 3_000;

beforeAll(async () => {
  postgres = await OwnPostgres.create();
  service = await ServiceProcess.start({
    DATABASE_URL: postgres.url,
    DATABASE_TIMEOUT_MS: String(databaseTimeoutMs),
    TRUST_PROXY: 'true',
    LOG_LEVEL: 'warn',
  });
  database = await openDatabase({ databaseUrl: postgres.url, poolMax: 2, logger: createLogger('silent') });
  const user = await createTestUser(database.db, { password: null });
  const session = await insertSession(
    database.db,
    {
      id: crypto.randomUUID(),
      refreshTokenId: crypto.randomUUID(),
      userId: user.id,
      userAgent: 'fault test',
      ipAddress: '127.0.0.1',
      browserName: '',
      authMethod: 'pwd',
    },
    new Date(),
  );
  bearer = await signMainAuthToken(
    await signingKeyFromPem(service.env.MAIN_AUTH_PRIVATE_KEY!, 'main-auth'),
    { issuer: service.issuer, audience: 'urn:ecosystem:api' },
    user,
    { sessionId: session.id },
  );
  // Several service clients: each may make 20 token requests a minute (the spec's limit).
  for (let index = 0; index < 8; index++) {
    const { client, clientSecret } = await createServiceClient(database.db, ['service:crm.aggregates.read']);
    serviceClients.push({ id: client.clientId, secret: clientSecret! });
  }
}, 120_000);

afterAll(async () => {
  await database?.close();
  await service?.kill();
  await postgres?.destroy();
});

type Shape = 'oauth' | 'api';
interface Answer {
  shape: Shape;
  status: number;
  retryAfter: string | null;
  body: string;
  askedAt: number;
  ms: number;
}

let tokenRequests = 0;
const asks: { shape: Shape; ask: () => Promise<Response> }[] = [
  {
    shape: 'oauth',
    ask: () => {
      const client = serviceClients[tokenRequests++ % serviceClients.length]!;
      return fetch(service.url('/oauth/token'), {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'grant_type=client_credentials',
        signal: AbortSignal.timeout(boundMs + 5_000),
      });
    },
  },
  {
    shape: 'api',
    ask: () =>
      fetch(service.url('/api/v2/identity/auth/me'), {
        headers: { authorization: `Bearer ${bearer}` },
        signal: AbortSignal.timeout(boundMs + 5_000),
      }),
  },
  {
    shape: 'api',
    ask: () =>
      fetch(service.url('/api/v2/identity/auth/flow/start'), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-forwarded-for': `10.9.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`,
        },
        body: JSON.stringify({ flow: 'login' }),
        signal: AbortSignal.timeout(boundMs + 5_000),
      }),
  },
];

describe('PostgreSQL restarted under load', () => {
  it('answers 503 + Retry-After in each endpoint’s shape meanwhile, bounded, and recovers by itself', async () => {
    const answers: Answer[] = [];
    let running = true;
    const load = asks.map(async ({ shape, ask }, index) => {
      while (running) {
        const askedAt = Date.now();
        const response = await ask();
        answers.push({
          shape,
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          body: await response.text(),
          askedAt,
          ms: Date.now() - askedAt,
        });
        // The token endpoint's budget is 20 a minute per client: pace it.
        if (index === 0) await new Promise((resolve) => setTimeout(resolve, 400));
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await postgres.stop();
    const stoppedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await postgres.start();
    const restartedAt = Date.now();
    // Recovered: every kind of request succeeds again, without anyone restarting the service.
    let recoveredAt = 0;
    while (Date.now() - restartedAt < 15_000) {
      const recent = answers.filter((answer) => answer.askedAt > Date.now() - 1_000);
      const kinds = new Set(recent.map((answer) => answer.shape));
      if (kinds.size === 2 && recent.every((answer) => answer.status === 200)) {
        recoveredAt = Date.now();
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    running = false;
    await Promise.all(load);

    expect(recoveredAt, 'the service did not recover by itself').toBeGreaterThan(0);
    expect(recoveredAt - restartedAt).toBeLessThan(10_000);
    const whileAway = answers.filter((answer) => answer.askedAt > stoppedAt && answer.askedAt < restartedAt);
    expect(whileAway.filter((answer) => answer.status === 503).length).toBeGreaterThan(0);
    for (const answer of answers) {
      expect([200, 503], answer.body).toContain(answer.status);
      expect(answer.ms, 'a request waited past the bound').toBeLessThan(boundMs);
      if (answer.status !== 503) continue;
      expect(answer.retryAfter).toMatch(/^\d+$/);
      const body = JSON.parse(answer.body) as Record<string, unknown>;
      if (answer.shape === 'oauth') {
        expect(body).toMatchObject({
          error: 'temporarily_unavailable',
          error_description: expect.any(String),
        });
        // RFC 6749's two members, and at most our request id beside them.
        expect(
          Object.keys(body).filter((key) => !['error', 'error_description', 'request_id'].includes(key)),
        ).toEqual([]);
      } else {
        expect(body).toEqual({
          error: 'service_unavailable',
          message: expect.any(String),
          request_id: expect.any(String),
        });
      }
    }
    // The pool's connections broken by the restart were replaced: everything asked once it recovered succeeded.
    const settled = answers.filter((answer) => answer.askedAt > recoveredAt);
    expect(settled.length).toBeGreaterThan(0);
    expect(settled.every((answer) => answer.status === 200)).toBe(true);
  }, 90_000);
});
