import knex from 'knex';
import type { Clock } from '../clock.js';
import type { Database, DatabaseKind } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { EventBus } from './event-bus.js';
import type { EventCatalog } from './event-catalog.js';
import { listenForOutboxCommits, type OutboxListener } from './outbox/outbox-listener.js';
import { Outbox } from './outbox/outbox.js';
import { OutboxRelay } from './outbox/outbox-relay.js';

export interface EventRuntime<Catalog extends EventCatalog> {
  bus: EventBus;
  outbox: Outbox<Catalog>;
  relay: OutboxRelay;
  /** Stops the relay and the LISTEN connection, then closes the bus (the NATS connection). */
  close(): Promise<void>;
}

export interface EventRuntimeOptions<Catalog extends EventCatalog> {
  db: Database;
  databaseKind: DatabaseKind;
  bus: EventBus;
  catalog: Catalog;
  producer: string;
  logger: Logger;
  clock: Clock;
  /**
   * Whether this process publishes the outbox (default true). Off in all but one worker of a cluster:
   * one relay per machine is enough, and the others' events reach it through NOTIFY.
   */
  relayEvents?: boolean;
}

/**
 * The events of one node: the outbox its changes write to, the relay that publishes the outbox to the
 * bus, woken right after each local commit and, on PostgreSQL, by LISTEN/NOTIFY on commits of any node.
 */
export async function startEventRuntime<Catalog extends EventCatalog>(
  options: EventRuntimeOptions<Catalog>,
): Promise<EventRuntime<Catalog>> {
  const { db, bus, logger, clock } = options;
  const onPostgres = options.databaseKind === 'postgres';
  const relays = options.relayEvents ?? true;
  // On PostgreSQL the relay has a connection of its own: a pool busy with requests must not delay it.
  // Same settings otherwise (its bounds on waiting for the database, its logger).
  const relayDb = onPostgres && relays ? knex({ ...db.client.config, pool: { min: 0, max: 1 } }) : db;
  const relay = new OutboxRelay({ db: relayDb, bus, logger, clock });
  const outbox = new Outbox({
    db,
    catalog: options.catalog,
    producer: options.producer,
    clock,
    notifyOnCommit: onPostgres,
    afterCommit: () => relay.wake(),
  });
  const listener: OutboxListener | undefined =
    onPostgres && relays ? await listenForOutboxCommits(db, () => relay.wake(), logger) : undefined;
  // Back from an outage the broker takes events again at once: no need to wait out the relay's back-off.
  const stopResuming = relays ? bus.onReconnect(() => relay.resume()) : () => {};
  if (relays) relay.start();
  return {
    bus,
    outbox,
    relay,
    async close() {
      await listener?.close();
      stopResuming();
      await relay.stop();
      if (relayDb !== db) await relayDb.destroy();
      await bus.close();
    },
  };
}
