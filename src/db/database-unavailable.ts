/**
 * "The database can't serve this request now": the one classification every surface maps to 503 with
 * Retry-After (our JSON APIs, the OAuth endpoints, the pages). It is away, or it rolled the request's
 * transaction back to end a conflict with another. Anything else a query throws stays a bug (500).
 */

/** How long a client is asked to wait (Retry-After) while the database is away: a restart's time. */
export const databaseRetryAfterSeconds = 5;

/** The connection could not be made or was lost (Node's net errors, as pg reports them). */
const networkErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs of a server that is going away or not there yet (class 08, connection
 * exception, is matched by its prefix): 57P01 admin_shutdown (a restart terminates every session),
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, in recovery), 53300
 * too_many_connections.
 */
const serverStateCodes = new Set(['57P01', '57P02', '57P03', '53300']);

/**
 * A transaction PostgreSQL rolled back to end a conflict: 40P01 deadlock_detected (two requests
 * locking the same rows in turn), 40001 serialization_failure. Nothing of it was written, and the
 * same request sent again will most likely pass.
 */
const transactionConflictCodes = new Set(['40P01', '40001']);

/**
 * Errors without a code, by their text (knex prefixes a failed query's text to the message, so these
 * are looked for anywhere in it).
 */
const unavailableMessages = [
  // pg: the socket closed ("... unexpectedly", "... due to connection timeout"), or the connect timeout
  'Connection terminated',
  'timeout expired',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  // knex: the pool is being destroyed (the service is closing)
  'Unable to acquire a connection',
  // PGlite: the embedded database was closed (the service is closing)
  'PGlite is closed',
];

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // A request body the client cut off (raw-body's 'request.aborted', code ECONNABORTED too): the client
  // went away, not the database.
  if ((error as { type?: unknown }).type === 'request.aborted') return false;
  // knex: no pooled connection within acquireConnectionTimeout.
  if (error.name === 'KnexTimeoutError') return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (
      networkErrorCodes.has(code) ||
      serverStateCodes.has(code) ||
      transactionConflictCodes.has(code) ||
      /^08[0-9A-Z]{3}$/.test(code)
    ) {
      return true;
    }
  }
  if (unavailableMessages.some((text) => error.message.includes(text))) return true;
  // Node tries every address of a host name (IPv6 and IPv4): one AggregateError of their failures.
  return error instanceof AggregateError && error.errors.some((inner) => isDatabaseUnavailable(inner));
}
