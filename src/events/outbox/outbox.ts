import type { Knex } from 'knex';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { createEnvelope, type Envelope } from '../envelope.js';
import type { EventCatalog, EventData } from '../event-catalog.js';
import { insertOutboxEvent, notifyOutbox } from './outbox-repository.js';

/** Adds an event to the open transaction; `orderingKey` names what it is about (e.g. "subject:algebra"). */
export type EmitEvent<Catalog extends EventCatalog> = <Type extends keyof Catalog & string>(
  messageType: Type,
  data: EventData<Catalog, Type>,
  orderingKey: string,
) => Promise<Envelope>;

export interface OutboxOptions<Catalog extends EventCatalog> {
  db: Database;
  catalog: Catalog;
  producer: string;
  clock: Clock;
  /** pg: NOTIFY the relays of every node on commit. PGlite has one process: the in-process wake does. */
  notifyOnCommit: boolean;
  /** Called after a transaction that emitted events committed: wakes this node's relay at once. */
  afterCommit: () => void;
}

/**
 * The writing side of the transactional outbox: a change and its events commit together or not at all.
 * Payloads are checked against the catalogue's schema, so nothing unpublishable is ever stored.
 */
export class Outbox<Catalog extends EventCatalog> {
  constructor(private readonly options: OutboxOptions<Catalog>) {}

  /** Runs `work` in a transaction; the events it emits are stored in that same transaction. */
  async transaction<T>(work: (trx: Knex.Transaction, emit: EmitEvent<Catalog>) => Promise<T>): Promise<T> {
    let emitted = 0;
    const result = await this.options.db.transaction(async (trx) => {
      const emit: EmitEvent<Catalog> = async (messageType, data, orderingKey) => {
        const envelope = await this.add(trx, messageType, data, orderingKey);
        emitted += 1;
        return envelope;
      };
      return work(trx, emit);
    });
    if (emitted > 0) this.options.afterCommit();
    return result;
  }

  /** Adds one event to an open transaction (the caller wakes the relay after commit). */
  async add<Type extends keyof Catalog & string>(
    trx: Knex.Transaction,
    messageType: Type,
    data: EventData<Catalog, Type>,
    orderingKey: string,
  ): Promise<Envelope> {
    const schema = this.options.catalog[messageType];
    if (!schema) throw new Error(`unknown message type ${messageType}`);
    const now = this.options.clock.now();
    const envelope = createEnvelope(messageType, schema.parse(data), this.options.producer, now);
    await insertOutboxEvent(trx, envelope, orderingKey, now);
    if (this.options.notifyOnCommit) await notifyOutbox(trx);
    return envelope;
  }
}
