import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database, Queryable } from '../../../src/db/database.js';
import { crmSnapshotServer } from '../../../src/management/crm-simulator/crm-snapshot-server.js';
import { createClient } from '../../../src/oidc/models/oauth-client.js';
import type { Envelope } from '../../../src/events/envelope.js';
import type { CrmEnvelope } from '../../../src/management/crm-contract/crm-envelope.js';
import type { Period } from '../../../src/management/crm-contract/crm-snapshots.js';
import { CrmState } from '../../../src/management/crm-simulator/crm-state.js';
import {
  consumerBalance,
  consumerSales,
  consumerTeacherPayouts,
} from '../../../src/management/dashboards/consumer-figures.js';
import type { InProcessCrmSource } from '../../../src/management/ingestion/in-process-crm-source.js';
import {
  addContributions,
  contributionsOf,
  type Contribution,
} from '../../../src/management/records/record-contributions.js';
import type { TestService } from '../../support/test-service.js';

/** crm's ground truth of a history: the latest version of each record. */
export function groundTruth(history: CrmEnvelope[]): CrmState {
  const state = new CrmState();
  for (const envelope of history) state.apply(envelope);
  return state;
}

/** Publishes messages on the service's embedded bus, as crm running in the same process would. */
export async function publishInProcess(svc: TestService, messages: (string | object)[]): Promise<void> {
  for (const message of messages) {
    const body = (typeof message === 'string' ? JSON.parse(message) : message) as Envelope;
    await svc.service.events.bus.publish({ ...body, messageType: body.messageType ?? 'crm.unknown' });
  }
}

/** Waits until the consumer has handled everything the embedded bus delivered. */
export async function consumed(svc: TestService): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await (svc.service.management.crmEvents as InProcessCrmSource).idle();
}

/** The consumer's figures and crm's of the same periods, side by side, without the generation times. */
export async function figuresOf(db: Queryable, truth: CrmState, periods: Period[], months: string[]) {
  const now = new Date();
  const strip = <T extends object>(value: T) => {
    const {
      generatedAt: _generatedAt,
      asOf: _asOf,
      items: _items,
      ...rest
    } = value as Record<string, unknown>;
    return rest;
  };
  return {
    consumer: {
      sales: await Promise.all(periods.map(async (period) => strip(await consumerSales(db, period, now)))),
      balance: strip(await consumerBalance(db, now)),
      payouts: await Promise.all(
        months.map(async (month) => strip(await consumerTeacherPayouts(db, month, now))),
      ),
    },
    crm: {
      sales: periods.map((period) => strip(truth.sales(period, now))),
      balance: strip(truth.balance(now)),
      payouts: months.map((month) => strip(truth.teacherPayouts(month, now))),
    },
  };
}

/** The daily totals recomputed from the kept records: what the incremental totals must always equal. */
export async function totalsRebuiltFromRecords(db: Queryable): Promise<Map<string, Contribution>> {
  const records = await db('crm_records').select('entity', 'data');
  const totals = new Map<string, Contribution>();
  for (const record of records) addContributions(totals, contributionsOf(record.entity, record.data), 1);
  for (const [key, total] of totals) if (total.count === 0 && total.amountMinor === 0) totals.delete(key);
  return totals;
}

export async function storedTotals(db: Queryable): Promise<Map<string, Contribution>> {
  const rows = await db.raw(
    `select metric, to_char(day, 'YYYY-MM-DD') as day, dimension, currency, count, amount_minor
       from crm_daily_totals where count <> 0 or amount_minor <> 0`,
  );
  return new Map(
    (rows.rows as Record<string, unknown>[]).map((row) => [
      `${row.metric}\u0000${row.day}\u0000${row.dimension}\u0000${row.currency}`,
      {
        metric: row.metric,
        day: row.day,
        dimension: row.dimension,
        currency: row.currency,
        count: Number(row.count),
        amountMinor: Number(row.amount_minor),
      } as Contribution,
    ]),
  );
}

/** A GET of the management API (/api/v2/management + path) with a bearer token. */
export async function managementGet(
  svc: TestService,
  path: string,
  token?: string,
): Promise<{ status: number; body: Json; text: string; headers: Headers }> {
  const response = await fetch(svc.url(`/api/v2/management${path}`), {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const text = await response.text();
  let body: Json;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, body, text, headers: response.headers };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are read field by field
type Json = any;

/**
 * The simulated crm's snapshot endpoints on a port of their own, started before the service (whose
 * CRM_BASE_URL must name it) and bound to the service's issuer once that is known.
 */
export async function startSimulatedCrmApi(state: () => CrmState) {
  let handler: http.RequestListener = (_request, response) => {
    response.statusCode = 503;
    response.end();
  };
  const server = http.createServer((request, response) => handler(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let control: ReturnType<typeof crmSnapshotServer>['control'] | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    attach(svc: TestService) {
      const simulated = crmSnapshotServer({
        issuer: svc.issuer,
        audience: svc.service.config.apiAudience,
        state,
      });
      control = simulated.control;
      handler = simulated.app.callback();
    },
    get control() {
      return control!;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A service client allowed to read crm's snapshots, for CRM_CLIENT_ID / CRM_CLIENT_SECRET. */
export async function crmReaderClient(db: Queryable) {
  const { client, clientSecret } = await createClient(db as Database, {
    name: 'management → crm',
    type: 'confidential',
    grantTypes: ['client_credentials'],
    scopes: ['service:crm.aggregates.read', 'service:crm.teacher_payouts.read'],
  });
  return { CRM_CLIENT_ID: client.clientId, CRM_CLIENT_SECRET: clientSecret! };
}

/** The all-time totals next to the daily totals summed over every day: they must be equal. */
export async function allTimeTotalsAgainstDaily(db: Queryable) {
  const query = async (sql: string) =>
    ((await db.raw(sql)) as { rows: Record<string, unknown>[] }).rows.map((row) => ({
      ...row,
      count: Number(row.count),
      amount_minor: Number(row.amount_minor),
    }));
  return {
    allTime: await query(
      `select metric, dimension, currency, count, amount_minor from crm_all_time_totals
        where count <> 0 or amount_minor <> 0 order by 1, 2, 3`,
    ),
    daily: await query(
      `select metric, dimension, currency, sum(count) as count, sum(amount_minor) as amount_minor
         from crm_daily_totals group by 1, 2, 3
       having sum(count) <> 0 or sum(amount_minor) <> 0 order by 1, 2, 3`,
    ),
  };
}
