import type { Knex } from 'knex';
import { outsideRequests } from '../outside-requests.js';

/**
 * knex's pool opens and takes back its connections outside any request's context (outside-requests.ts):
 * a connection opened during a request, and the pool's record of one a request put back, no longer
 * keep that request reachable.
 */
export function keepPoolOutsideRequests(db: Knex): void {
  const client = db.client as {
    acquireRawConnection(): Promise<unknown>;
    releaseConnection(connection: unknown): Promise<void>;
  };
  const open = client.acquireRawConnection.bind(client);
  const release = client.releaseConnection.bind(client);
  client.acquireRawConnection = () => outsideRequests(open);
  client.releaseConnection = (connection) => outsideRequests(() => release(connection));
}
