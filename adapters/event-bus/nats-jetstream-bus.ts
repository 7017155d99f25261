import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamClient,
} from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../src/logger.js';
import { envelopeSchema, type Envelope } from '../../src/events/envelope.js';
import type { EventBus, EventHandler, EventSubscription, Unsubscribe } from '../../src/events/event-bus.js';

export interface NatsJetStreamBusOptions {
  /** nats://host:port (comma-separated for a cluster). */
  url: string;
  /** The JetStream stream holding the platform events. */
  stream: string;
  /** Put before every subject (messageType); lets test runs and environments share one server. */
  subjectPrefix?: string;
  /** Connection name shown by the server (monitoring). */
  name?: string;
  logger: Logger;
  /** How long a publish waits for the connection and the stream's acknowledgement. */
  publishTimeoutMs?: number;
  /** The broker drops a message id it has seen within this window (re-sends after a relay crash). */
  duplicateWindowMs?: number;
  /** How long the stream keeps messages. */
  maxAgeMs?: number;
}

interface Subscription {
  subject: string;
  handler: EventHandler;
  messages?: ConsumerMessages;
  stopped: boolean;
  markReady: () => void;
}

const connectRetryDelayMs = 1000;

/**
 * The distributed event bus: NATS JetStream. Publishing waits for the stream's acknowledgement and sets
 * Nats-Msg-Id = messageId, so a message the relay sends twice is stored once. Subscribing uses an ordered
 * consumer per message type from "now on"; it resumes in order after a reconnect, and `onReconnect`
 * tells subscribers to resync anyway.
 *
 * The connection is made in the background and kept forever (the client reconnects by itself): a broker
 * that is down at start does not stop the service; events wait in the outbox until it is back.
 */
export class NatsJetStreamBus implements EventBus {
  readonly #options: Required<Omit<NatsJetStreamBusOptions, 'logger'>>;
  readonly #logger: Logger;
  readonly #subscriptions = new Set<Subscription>();
  readonly #reconnectHandlers = new Set<() => void>();
  #connection: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  #connected: Promise<void>;
  #closed = false;
  #connecting: Promise<void>;

  constructor(options: NatsJetStreamBusOptions) {
    this.#logger = options.logger;
    this.#options = {
      url: options.url,
      stream: options.stream,
      subjectPrefix: options.subjectPrefix ?? '',
      name: options.name ?? 'identity-service',
      publishTimeoutMs: options.publishTimeoutMs ?? 5000,
      duplicateWindowMs: options.duplicateWindowMs ?? 2 * 60 * 1000,
      maxAgeMs: options.maxAgeMs ?? 7 * 24 * 60 * 60 * 1000,
    };
    let resolveConnected!: () => void;
    this.#connected = new Promise((resolve) => (resolveConnected = resolve));
    this.#connecting = this.#connectUntilReady().then(resolveConnected);
  }

  /** The subject of a message type on this bus. */
  subjectOf(messageType: string): string {
    return `${this.#options.subjectPrefix}${messageType}`;
  }

  /** Resolves once connected and the stream exists; rejects after `timeoutMs`. */
  async ready(timeoutMs = this.#options.publishTimeoutMs): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.#connected,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`not connected to NATS at ${this.#options.url}`)),
            timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async publish(envelope: Envelope): Promise<void> {
    if (this.#closed) throw new Error('the NATS bus is closed');
    if (!this.#js) await this.ready();
    await this.#js!.publish(this.subjectOf(envelope.messageType), JSON.stringify(envelope), {
      msgID: envelope.messageId,
      timeout: this.#options.publishTimeoutMs,
    });
  }

  subscribe(messageType: string, handler: EventHandler): EventSubscription {
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const subscription: Subscription = {
      subject: this.subjectOf(messageType),
      handler,
      stopped: false,
      markReady,
    };
    this.#subscriptions.add(subscription);
    void this.#connected.then(() => this.#consume(subscription));
    return {
      ready,
      unsubscribe: () => {
        subscription.stopped = true;
        this.#subscriptions.delete(subscription);
        void subscription.messages?.close();
      },
    };
  }

  onReconnect(handler: () => void): Unsubscribe {
    this.#reconnectHandlers.add(handler);
    return () => this.#reconnectHandlers.delete(handler);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const subscription of this.#subscriptions) {
      subscription.stopped = true;
      await subscription.messages?.close();
    }
    this.#subscriptions.clear();
    await this.#connecting;
    await this.#connection?.close();
  }

  async #connectUntilReady(): Promise<void> {
    let warned = false;
    while (!this.#closed) {
      let connection: NatsConnection | undefined;
      try {
        connection = await connect({
          servers: this.#options.url.split(','),
          name: this.#options.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: connectRetryDelayMs,
          timeout: 2000,
        });
        await this.#ensureStream(connection);
        if (this.#closed) {
          await connection.close();
          return;
        }
        this.#connection = connection;
        this.#js = jetstream(connection);
        void this.#watchStatus(connection);
        this.#logger.info({ url: this.#options.url, stream: this.#options.stream }, 'connected to NATS');
        return;
      } catch (error) {
        await connection?.close().catch(() => {});
        if (!warned) {
          this.#logger.warn(
            { err: error, url: this.#options.url },
            'cannot reach NATS JetStream yet; events wait in the outbox, retrying',
          );
          warned = true;
        }
        await new Promise((resolve) => setTimeout(resolve, connectRetryDelayMs).unref());
      }
    }
  }

  async #ensureStream(connection: NatsConnection): Promise<void> {
    const manager = await jetstreamManager(connection);
    try {
      await manager.streams.info(this.#options.stream);
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound))
        throw error;
      await manager.streams.add({
        name: this.#options.stream,
        subjects: [`${this.#options.subjectPrefix}platform.>`],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        duplicate_window: nanos(this.#options.duplicateWindowMs),
        max_age: nanos(this.#options.maxAgeMs),
      });
    }
  }

  async #watchStatus(connection: NatsConnection): Promise<void> {
    for await (const status of connection.status()) {
      if (status.type === 'disconnect') this.#logger.warn('disconnected from NATS; reconnecting');
      if (status.type === 'reconnect') {
        this.#logger.info('reconnected to NATS');
        this.#notifyReconnect();
      }
    }
  }

  /**
   * Reads the subscription's ordered consumer until unsubscribed. Should the consumer itself fail and
   * have to be made again (from "now"), messages may be lost in between: subscribers are told to resync.
   */
  async #consume(subscription: Subscription): Promise<void> {
    let restarted = false;
    while (!subscription.stopped && !this.#closed) {
      try {
        const consumer = await this.#js!.consumers.get(this.#options.stream, {
          filter_subjects: subscription.subject,
          deliver_policy: DeliverPolicy.New,
        });
        const messages = await consumer.consume();
        subscription.messages = messages;
        subscription.markReady();
        if (restarted) this.#notifyReconnect();
        if (subscription.stopped) await messages.close();
        for await (const message of messages)
          await this.#deliver(subscription, message.subject, message.string());
      } catch (error) {
        if (subscription.stopped || this.#closed) return;
        this.#logger.warn(
          { err: error, subject: subscription.subject },
          'NATS consumer failed; recreating it',
        );
      }
      restarted = true;
      if (!subscription.stopped && !this.#closed) {
        await new Promise((resolve) => setTimeout(resolve, connectRetryDelayMs).unref());
      }
    }
  }

  async #deliver(subscription: Subscription, subject: string, text: string): Promise<void> {
    const parsed = envelopeSchema.safeParse(safeJson(text));
    if (!parsed.success) {
      this.#logger.warn({ subject }, 'ignored a malformed event');
      return;
    }
    try {
      await subscription.handler(parsed.data);
    } catch (error) {
      this.#logger.error(
        { err: error, messageId: parsed.data.messageId, subject },
        'event subscriber failed',
      );
    }
  }

  #notifyReconnect(): void {
    for (const handler of this.#reconnectHandlers) {
      try {
        handler();
      } catch (error) {
        this.#logger.error({ err: error }, 'reconnect handler failed');
      }
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
