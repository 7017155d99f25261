import pg from 'pg';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import { outboxChannel } from './outbox-repository.js';

export interface OutboxListener {
  close(): Promise<void>;
}

const reconnectDelayMs = 1000;

/**
 * LISTENs on the outbox channel with a dedicated PostgreSQL connection (a pooled one can't keep a
 * LISTEN) and wakes the relay on every commit that wrote events, whichever node wrote them. A lost
 * connection is re-opened; the relay's polling covers the gap.
 */
export async function listenForOutboxCommits(
  db: Database,
  onCommit: () => void,
  logger: Logger,
): Promise<OutboxListener> {
  const connection = db.client.config.connection as pg.ClientConfig | string;
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const open = async (): Promise<void> => {
    const candidate = new pg.Client(connection);
    candidate.on('notification', (message) => {
      if (message.channel === outboxChannel) onCommit();
    });
    candidate.on('error', (error) => {
      logger.warn({ err: error }, 'outbox LISTEN connection lost; reconnecting');
      void candidate.end().catch(() => {});
      if (client === candidate) client = undefined;
      scheduleReconnect();
    });
    await candidate.connect();
    await candidate.query(`listen ${outboxChannel}`);
    if (closed) {
      await candidate.end();
      return;
    }
    client = candidate;
    // Commits made while we were not listening: let the relay look.
    onCommit();
  };

  const scheduleReconnect = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      open().catch((error: unknown) => {
        logger.warn({ err: error }, 'outbox LISTEN reconnect failed');
        scheduleReconnect();
      });
    }, reconnectDelayMs);
    retry.unref();
  };

  await open();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
      client = undefined;
    },
  };
}
