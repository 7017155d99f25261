import { AsyncResource } from 'node:async_hooks';

/**
 * The async context of no request: this module's, made when the service's modules load (the database
 * module imports it, so before any request).
 *
 * Everything asynchronous made during a request carries that request's AsyncLocalStorage context
 * (the engine's: its ctx, and with it the whole request) for as long as it lives. A connection
 * opened during a request and kept for the next ones kept that request reachable until it closed;
 * the database pool's record of a free connection, made when a request put it back, until the
 * connection's next use (up to its 30 s idle timeout on a quiet node). Each was a whole request's
 * objects, a few at a time.
 */
const noRequest = new AsyncResource('outside-requests');

/**
 * Runs `work` outside the request it is called from: for what a request sets up but outlives (a
 * connection kept open for the next ones: the database's, the rate limits' store's, SMTP's, fetch's).
 */
export function outsideRequests<T>(work: () => T): T {
  return noRequest.runInAsyncScope(work);
}

/** fetch, with the connections it opens and keeps alive outside the calling request. */
export const fetchOutsideRequests: typeof fetch = (input, init) => outsideRequests(() => fetch(input, init));
