import { AsyncResource } from 'node:async_hooks';

/**
 * Runs `work` in an async context of its own (the one of the moment `outsideRequests()` was called, at
 * startup: no request's), not in the request's it is called from. For what a request sets up but
 * outlives it: a connection kept open for the next ones (the database's, the rate limits' store's,
 * SMTP's).
 *
 * Everything asynchronous made during a request carries that request's AsyncLocalStorage context
 * (the engine's: its ctx, and with it the whole request) for as long as it lives. A connection
 * opened during a request kept that request reachable until it closed; the database pool's record of
 * a free connection, made when a request put it back, until the connection's next use (up to its 30 s
 * idle timeout on a quiet node). Each was a whole request's objects, a few at a time.
 */
export type OutsideRequests = <T>(work: () => T) => T;

export function outsideRequests(): OutsideRequests {
  const scope = new AsyncResource('outside-requests');
  return (work) => scope.runInAsyncScope(work);
}
