import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { createServiceClient, createTestUser } from '../support/fixtures.js';
import { ServiceProcess } from './support/service-process.js';

// npm start with HTTP_WORKERS=2: one worker is killed (SIGKILL) while requests are in flight. They fail
// as a connection error or succeed, never a 500 or a half answer (no status, no body: never a fragment); the supervisor replaces the worker;
// what users and clients rely on across requests (rate-limit budgets, sessions) lives in the database,
// so it holds on both workers and on the replacement.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let service: ServiceProcess;

beforeAll(async () => {
  database = await createTestDatabase();
  service = await ServiceProcess.start({ DATABASE_URL: database.url!, HTTP_WORKERS: '2', LOG_LEVEL: 'warn' });
}, 90_000);
afterAll(async () => {
  await service?.kill();
  await database?.close();
});

interface Answer {
  status: number;
  body: string;
}

/** A request on a connection of its own: each new connection goes to whichever worker accepts it first. */
function request(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<Answer>((resolve, reject) => {
    const outgoing = http.request(
      { host: '127.0.0.1', port: service.port, method, path, agent: false, headers, timeout: 5_000 },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode!, body: text }));
        response.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error('hung')));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const json = (body: unknown) => ({
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

async function signIn(): Promise<string> {
  const user = await createTestUser(database.db);
  const step = async (path: string, body: unknown) => {
    const { headers, body: payload } = json(body);
    const answer = await request('POST', `/api/v2/identity${path}`, headers, payload);
    expect(answer.status, answer.body).toBe(200);
    return JSON.parse(answer.body) as { sessionId: string; accessToken?: string };
  };
  const started = await step('/auth/flow/start', { flow: 'login' });
  const identified = await step('/auth/flow/step', {
    sessionId: started.sessionId,
    step: 'phone-email',
    input: { identifier: user.email },
  });
  const done = await step('/auth/flow/step', {
    sessionId: identified.sessionId,
    step: 'password',
    input: { password: user.password },
  });
  return done.accessToken!;
}

describe('a cluster worker killed while serving', () => {
  it('in-flight requests fail cleanly, the worker is replaced, sessions and limits stay shared', async () => {
    const token = await signIn();
    const me = () => request('GET', '/api/v2/identity/auth/me', { authorization: `Bearer ${token}` });
    // The session, started on one worker, is known to both.
    for (let attempt = 0; attempt < 4; attempt++) expect((await me()).status).toBe(200);

    const [victim] = service.childPids();
    expect(service.childPids()).toHaveLength(2);
    const outcomes: (Answer | Error)[] = [];
    const inFlight = Array.from({ length: 40 }, async () => {
      try {
        outcomes.push(await me());
      } catch (error) {
        outcomes.push(error as Error);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    process.kill(victim!, 'SIGKILL');
    await Promise.all(inFlight);
    for (const outcome of outcomes) {
      if (outcome instanceof Error) {
        // The connection died with the worker: the client sees it at once and can retry; nothing
        // half-done, and never left open unanswered until the client's own timeout (`hung`).
        expect(outcome.message).toMatch(/ECONNRESET|socket hang up|ECONNREFUSED|EPIPE/);
      } else {
        expect(outcome.status, outcome.body).toBe(200);
        expect(JSON.parse(outcome.body)).toHaveProperty('id');
      }
    }

    // Replaced: two workers again, the victim not among them; both serve the same session.
    await expect
      .poll(() => service.childPids().length === 2 && !service.childPids().includes(victim!), {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(true);
    await expect
      .poll(async () => (await me().catch(() => ({ status: 0 }))).status, { timeout: 30_000 })
      .toBe(200);
    for (let attempt = 0; attempt < 4; attempt++) expect((await me()).status).toBe(200);

    // Limits are one budget for the cluster: a service client's 20 token requests a minute, spread over
    // the workers (one connection each, whichever worker accepts it), and the 21st is refused, wherever it lands.
    const { client, clientSecret } = await createServiceClient(database.db, ['service:crm.aggregates.read']);
    const basic = `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}`;
    const tokenRequest = () =>
      request(
        'POST',
        '/oauth/token',
        { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        'grant_type=client_credentials',
      );
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 22; attempt++) statuses.push((await tokenRequest()).status);
    expect(statuses.slice(0, 20).every((status) => status === 200)).toBe(true);
    expect(statuses.slice(20)).toEqual([429, 429]);
  }, 120_000);
});
