import { AsyncResource } from 'node:async_hooks';
import type { Knex } from 'knex';

/**
 * Runs `work` in the async context of the pool's own (the moment this was called: the database's
 * opening), not in the request's it is called from.
 *
 * Everything asynchronous made during a request carries that request's AsyncLocalStorage context
 * (the engine's: its ctx, and with it the whole request) for as long as it lives. A pooled
 * connection outlives its request: opened during one, its socket kept that request reachable until
 * the connection was closed; put back into the pool by one, the pool's record of it (tarn's resource,
 * with a promise made at the release) kept the request until the connection's next use, up to its
 * 30 s idle timeout on a quiet node. Bounded by the pool's size, but each a whole request's objects,
 * and a test watching requests get collected saw one survive for 3–30 s now and then.
 */
export type OutsideRequests = <T>(work: () => T) => T;

export function outsideRequests(): OutsideRequests {
  const scope = new AsyncResource('database-pool');
  return (work) => scope.runInAsyncScope(work);
}

/** knex's pool opens and takes back its connections outside any request's context. */
export function keepPoolOutsideRequests(db: Knex): void {
  const client = db.client as {
    acquireRawConnection(): Promise<unknown>;
    releaseConnection(connection: unknown): Promise<void>;
  };
  const outside = outsideRequests();
  const open = client.acquireRawConnection.bind(client);
  const release = client.releaseConnection.bind(client);
  client.acquireRawConnection = () => outside(open);
  client.releaseConnection = (connection) => outside(() => release(connection));
}
