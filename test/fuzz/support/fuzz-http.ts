import http from 'node:http';
import { expect } from 'vitest';
import type { Queryable } from '../../../src/db/database.js';

/**
 * How many generated inputs each property runs. `npm test` keeps the whole fuzz suite near a minute on
 * two cores; `FUZZ_RUNS=10000 npm test -- test/fuzz` is the full run (docs/proofs.md has its figures).
 */
export const fuzzRuns = Number(process.env.FUZZ_RUNS ?? 100);

/** Per property: generous (a loaded 2-core machine takes ~100 ms an input); a property that timed out would
 * go on writing in the background and spoil the next property's row counts. */
export const fuzzTimeoutMs = Math.max(120_000, fuzzRuns * 300);

export interface FuzzResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

// One kept-alive connection pool for the whole file: a new TCP connection per input would cost more
// than the request.
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** Sends a request as it was generated (raw path, raw body), without a client's validation on the way. */
export function send(origin: string, request: FuzzRequest): Promise<FuzzResponse> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      {
        host: hostname,
        port,
        method: request.method,
        path: request.path,
        agent,
        headers: {
          ...(request.body === undefined ? {} : { 'content-length': Buffer.byteLength(request.body) }),
          ...request.headers,
        },
        timeout: 15_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode!,
            headers: response.headers,
            text: Buffer.concat(chunks).toString(),
          }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`${request.method} ${request.path} hung`)));
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

const stackLine = /\n\s+at .+[(:]\d+|node_modules|\/src\/.+\.ts|(Type|Reference|Syntax|Range)Error\b/;

/** Whatever the input: no server error and nothing of the code in the answer. */
export function expectNoServerFault(response: FuzzResponse, what: string): void {
  expect(response.status, `${what}: ${response.text.slice(0, 500)}`).not.toBe(500);
  expect(response.status, `${what}: ${response.text.slice(0, 500)}`).toBeLessThan(500);
  expect(response.text, what).not.toMatch(stackLine);
}

function parsedJson(response: FuzzResponse, what: string): Record<string, unknown> {
  expect(response.headers['content-type'], `${what}: ${response.text.slice(0, 300)}`).toContain(
    'application/json',
  );
  const body = JSON.parse(response.text) as unknown;
  expect(typeof body, what).toBe('object');
  return body as Record<string, unknown>;
}

/**
 * Our JSON APIs refuse with `{ error, message, details? }`; `alsoAllowed` names an endpoint's documented
 * extra fields (client registration: RFC 7591's `error_description`).
 */
export function expectApiError(response: FuzzResponse, what: string, alsoAllowed: string[] = []): void {
  const body = parsedJson(response, what);
  const allowed = ['error', 'message', 'details', 'request_id', ...alsoAllowed];
  expect(
    Object.keys(body).filter((key) => !allowed.includes(key)),
    what,
  ).toEqual([]);
  expect(body.error, what).toMatch(/^[a-z][a-z0-9_]*$/);
  expect(typeof body.message, what).toBe('string');
}

/** OAuth endpoints refuse with RFC 6749's `{ error, error_description? }`. */
export function expectOAuthError(response: FuzzResponse, what: string): void {
  const body = parsedJson(response, what);
  expect(body.error, `${what}: ${response.text}`).toMatch(/^[a-z][a-z0-9_]*$/);
  if ('error_description' in body) expect(typeof body.error_description, what).toBe('string');
  expect(
    Object.keys(body).filter(
      // `scope`: the engine names the scope it refused in an invalid_scope answer (docs/oauth.md).
      (key) =>
        !['error', 'error_description', 'error_uri', 'state', 'iss', 'request_id', 'scope'].includes(key),
    ),
    what,
  ).toEqual([]);
}

/** The tables of a database, listed once: migrations don't run while a file fuzzes. */
const tableLists = new WeakMap<Queryable, Promise<string[]>>();

function tablesOf(db: Queryable): Promise<string[]> {
  let tables = tableLists.get(db);
  if (!tables) {
    tables = (
      db.raw(
        `select table_name as name from information_schema.tables
          where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like 'knex_%'
          order by table_name`,
      ) as Promise<{ rows: { name: string }[] }>
    ).then(({ rows }) => rows.map((row) => row.name));
    tableLists.set(db, tables);
  }
  return tables;
}

/**
 * The number of rows of every table: what a refused input must leave as it was. One statement (the
 * catalogue query once per database): it runs twice per generated input, so its cost bounds a full run.
 */
export async function rowCounts(
  db: Queryable,
  ignored: readonly string[] = [],
): Promise<Record<string, number>> {
  const tables = (await tablesOf(db)).filter((name) => !ignored.includes(name));
  const union = tables
    .map((name) => `select '${name}' as name, count(*)::int as rows from "${name}"`)
    .join(' union all ');
  const { rows } = (await db.raw(union)) as { rows: { name: string; rows: number }[] };
  return Object.fromEntries(rows.map((row) => [row.name, row.rows]));
}

/**
 * Tables a refused request may legitimately write to: the counters that refusals are there to feed
 * (rate limits, failed sign-ins) and the audit trail of refused attempts.
 */
export const refusalCounters = [
  'rate_limits',
  'login_account_failures',
  'login_ip_throttle',
  'login_lockouts',
  'login_source_lockouts',
  'audit_log',
] as const;
