import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { serviceToken } from '../platform/support/platform-tokens.js';
import { runEntryPoint } from '../support/run-process.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { groundTruth, startSimulatedCrmApi } from './support/crm-fixtures.js';

const history = generateCrmHistory({ seed: 5, start: '2026-01-01', days: 40, leadsPerDay: 8 });
let svc: TestService;
let crmApi: Awaited<ReturnType<typeof startSimulatedCrmApi>>;
beforeAll(async () => {
  crmApi = await startSimulatedCrmApi(() => groundTruth(history));
  svc = await startTestService();
  crmApi.attach(svc);
});
afterAll(async () => {
  await svc?.close();
  await crmApi?.close();
});

describe('the crm simulator', () => {
  it('makes the same history from the same seed, a different one from another', () => {
    const again = generateCrmHistory({ seed: 5, start: '2026-01-01', days: 40, leadsPerDay: 8 });
    expect(again).toEqual(history);
    expect(generateCrmHistory({ seed: 6, start: '2026-01-01', days: 40, leadsPerDay: 8 })).not.toEqual(
      history,
    );
    const types = new Set(history.map((envelope) => envelope.messageType));
    expect(types.size).toBe(14);
  });

  it('serves the snapshots only to a client-credentials token of the identity service with the scope', async () => {
    const get = (path: string, token?: string) =>
      fetch(`${crmApi.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const sales = '/api/v2/crm/aggregates/sales?from=2026-01-01&to=2026-01-21';
    expect((await get(sales)).status).toBe(401);
    expect((await get(sales, 'not.a.jwt')).status).toBe(401);
    const payoutsOnly = await serviceToken(svc, ['service:crm.teacher_payouts.read']);
    expect((await get(sales, payoutsOnly.token)).status).toBe(403);
    expect((await get('/api/v2/crm/teacher-payouts?period=2026-01', payoutsOnly.token)).status).toBe(200);
    const aggregates = await serviceToken(svc, ['service:crm.aggregates.read']);
    const answer = await get(sales, aggregates.token);
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as Record<string, unknown> & { generatedAt: string };
    expect(body).toEqual(
      JSON.parse(
        JSON.stringify({
          ...groundTruth(history).sales({ from: '2026-01-01', to: '2026-01-21' }, new Date(body.generatedAt)),
        }),
      ),
    );
    // Repeatable: the same period answers the same figures.
    const { generatedAt: _first, ...figures } = body;
    const { generatedAt: _second, ...again } = (await (await get(sales, aggregates.token)).json()) as Record<
      string,
      unknown
    >;
    expect(again).toEqual(figures);
    expect(
      (await get('/api/v2/crm/aggregates/sales?from=2026-02-01&to=2026-01-01', aggregates.token)).status,
    ).toBe(400);
  });

  it('runs as npm run crm-sim, printing what it published and the ground truth', async () => {
    const result = await runEntryPoint(
      'src/management/crm-simulator/crm-sim.ts',
      [
        '--seed',
        '5',
        '--days',
        '40',
        '--leads-per-day',
        '8',
        '--copies',
        '2',
        '--poison',
        '1',
        '--port',
        '0',
        '--exit',
      ],
      { LOG_LEVEL: 'silent', DATA_DIR: '/nonexistent-crm-sim' },
    );
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({
      history: history.length,
      published: history.length * 2 + 2 + 3,
      deadLetters: 1,
      rejected: 3,
    });
    expect(summary.groundTruth.balance.currencies).toEqual(
      groundTruth(history).balance(new Date()).currencies,
    );
  });
});
