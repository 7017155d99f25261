import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamClient,
  type JsMsg,
} from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../src/logger.js';
import { envelopeSchema, type Envelope } from '../../src/events/envelope.js';
import type { EventBus, EventHandler, EventSubscription, Unsubscribe } from '../../src/events/event-bus.js';
import type {
  DurableBatchHandler,
  DurableConsumerOptions,
  DurableConsumption,
  DurableDelivery,
  DurableEventSource,
} from '../../src/events/durable-event-source.js';

export interface NatsJetStreamBusOptions {
  /** nats://host:port (comma-separated for a cluster). */
  url: string;
  /** The broker's user and password, or token (NATS_USER, NATS_PASSWORD, NATS_TOKEN); absent: anonymous. */
  credentials?: { user?: string; pass?: string; token?: string };
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
/** How long a batch may wait to fill up (durable consumers). */
const lingerMs = 20;

/**
 * The distributed event bus: NATS JetStream. Publishing waits for the stream's acknowledgement and sets
 * Nats-Msg-Id = messageId, so a message the relay sends twice is stored once. Subscribing uses an ordered
 * consumer per message type from "now on"; it resumes in order after a reconnect, and `onReconnect`
 * tells subscribers to resync anyway.
 *
 * The connection is made in the background and kept forever (the client reconnects by itself): a broker
 * that is down at start does not stop the service; events wait in the outbox until it is back.
 */
export class NatsJetStreamBus implements EventBus, DurableEventSource {
  readonly #options: Required<Omit<NatsJetStreamBusOptions, 'logger' | 'credentials'>>;
  readonly #credentials: NonNullable<NatsJetStreamBusOptions['credentials']>;
  readonly #logger: Logger;
  readonly #subscriptions = new Set<Subscription>();
  readonly #reconnectHandlers = new Set<() => void>();
  #connection: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  #connected: Promise<void>;
  #reachable = false;
  #closed = false;
  #connecting: Promise<void>;

  constructor(options: NatsJetStreamBusOptions) {
    this.#logger = options.logger;
    this.#credentials = options.credentials ?? {};
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
    this.#connecting = this.#connectUntilReady().then((afterFailures) => {
      resolveConnected();
      // Connected only after the broker was unreachable: like a reconnect, what was published meanwhile
      // was missed (caches resync) and events waited in the outbox (the relay stops its back-off).
      if (afterFailures) void this.#connected.then(() => this.#notifyReconnect());
    });
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
    await this.publishMessage(envelope.messageType, JSON.stringify(envelope), {
      messageId: envelope.messageId,
    });
  }

  /**
   * Publishes a text as it is under `<prefix><messageType>` and waits for the stream's acknowledgement.
   * Without `messageId` the broker does not de-duplicate it (a producer re-sending after the duplicate
   * window, or one that sets no id, as the crm simulator does on purpose).
   */
  async publishMessage(
    messageType: string,
    body: string,
    options: { messageId?: string } = {},
  ): Promise<void> {
    if (this.#closed) throw new Error('the NATS bus is closed');
    if (!this.#js) await this.ready();
    await this.#js!.publish(this.subjectOf(messageType), body, {
      ...(options.messageId ? { msgID: options.messageId } : {}),
      timeout: this.#options.publishTimeoutMs,
    });
  }

  /** Creates the stream with these subjects, or adds the missing subjects to it (prefixes sharing a server). */
  async ensureStream(name: string, subjects: string[]): Promise<void> {
    if (!this.#connection) await this.ready();
    const manager = await jetstreamManager(this.#connection!);
    try {
      const info = await manager.streams.info(name);
      const missing = subjects.filter((subject) => !info.config.subjects.includes(subject));
      if (missing.length > 0) {
        await manager.streams.update(name, { subjects: [...info.config.subjects, ...missing] });
      }
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound))
        throw error;
      await manager.streams.add({
        name,
        subjects,
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        duplicate_window: nanos(this.#options.duplicateWindowMs),
        max_age: nanos(this.#options.maxAgeMs),
      });
    }
  }

  /**
   * A durable pull consumer with explicit acknowledgement: messages are fetched ahead (twice a batch),
   * handed to `handler` in batches of what has arrived, acknowledged after the handler resolved, and
   * delivered again (at most `maxDeliveries` times) when the handler asks for it, throws, or the process
   * dies before acknowledging (after `ackWaitMs`). At most four batches are pending at once.
   */
  consumeDurable(options: DurableConsumerOptions, handler: DurableBatchHandler): DurableConsumption {
    const subjects = options.subjects.map((subject) => this.subjectOf(subject));
    const streamSubjects = (options.streamSubjects ?? options.subjects).map((subject) =>
      this.subjectOf(subject),
    );
    const state: { stopped: boolean; messages?: ConsumerMessages; wake?: () => void; room?: () => void } = {
      stopped: false,
    };
    let stopSignal!: () => void;
    const stopping = new Promise<void>((resolve) => (stopSignal = resolve));
    const running = (async () => {
      await Promise.race([this.#connected, stopping]);
      while (!state.stopped && !this.#closed) {
        try {
          await this.ensureStream(options.stream, streamSubjects);
          await this.#ensureDurableConsumer(options, subjects);
          const consumer = await this.#js!.consumers.get(options.stream, options.durableName);
          if (state.stopped) return;
          const messages = await consumer.consume({ max_messages: options.batchSize * 2 });
          if (state.stopped) {
            // Stopped while it started: never read, so its close() would wait for a reader; let it go.
            void messages.close().catch(() => {});
            return;
          }
          state.messages = messages;
          await this.#processBatches(state, messages, options, handler);
        } catch (error) {
          if (state.stopped || this.#closed) return;
          this.#logger.warn(
            { err: error, durable: options.durableName },
            'durable NATS consumer failed; restarting it',
          );
          await new Promise((resolve) => setTimeout(resolve, connectRetryDelayMs).unref());
        }
      }
    })();
    return {
      stop: async () => {
        state.stopped = true;
        stopSignal();
        state.wake?.();
        state.room?.();
        await state.messages?.close();
        await running;
      },
    };
  }

  async #ensureDurableConsumer(options: DurableConsumerOptions, subjects: string[]): Promise<void> {
    const manager = await jetstreamManager(this.#connection!);
    const settings = {
      // One subject: NATS servers before 2.10 know no list of filters.
      filter_subject: subjects[0],
      max_deliver: options.maxDeliveries,
      ack_wait: nanos(options.ackWaitMs),
      // Far above what is ever unacknowledged here (queue ≤ 2 batches, one in work, the client's
      // buffer and pull ≤ 4): reaching it would cut the pull requests short.
      max_ack_pending: options.batchSize * 10,
    };
    try {
      await manager.consumers.info(options.stream, options.durableName);
      await manager.consumers.update(options.stream, options.durableName, settings);
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound))
        throw error;
      await manager.consumers.add(options.stream, {
        durable_name: options.durableName,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ...settings,
      });
    }
  }

  async #processBatches(
    state: { stopped: boolean; wake?: () => void; room?: () => void },
    messages: ConsumerMessages,
    options: DurableConsumerOptions,
    handler: DurableBatchHandler,
  ): Promise<void> {
    const queue: JsMsg[] = [];
    let reading = true;
    const reader = (async () => {
      try {
        for await (const message of messages) {
          queue.push(message);
          state.wake?.();
          // Backpressure: the client pulls more only as we read, so unacknowledged messages stay well
          // under max_ack_pending (reaching it ends the pull requests: NATS answers 409 and the stream
          // trickles in until they are renewed).
          while (queue.length >= options.batchSize * 2 && !state.stopped) {
            await new Promise<void>((resolve) => (state.room = resolve));
            state.room = undefined;
          }
        }
      } finally {
        reading = false;
        state.wake?.();
      }
    })();
    while (!state.stopped) {
      if (queue.length === 0) {
        if (!reading) break;
        await new Promise<void>((resolve) => (state.wake = resolve));
        state.wake = undefined;
        continue;
      }
      // A batch costs a transaction whatever its size: give the messages on their way a moment to
      // arrive (up to lingerMs) rather than apply the first one alone.
      const lingerUntil = performance.now() + lingerMs;
      while (
        queue.length < options.batchSize &&
        reading &&
        !state.stopped &&
        performance.now() < lingerUntil
      ) {
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      const batch = queue.splice(0, options.batchSize);
      state.room?.();
      const deliveries: DurableDelivery[] = batch.map((message) => ({
        body: message.string(),
        deliveryCount: message.info.deliveryCount,
      }));
      let result: Awaited<ReturnType<DurableBatchHandler>>;
      try {
        result = await handler(deliveries);
      } catch (error) {
        this.#logger.error(
          { err: error, durable: options.durableName },
          'a batch failed; it will be delivered again',
        );
        result = { retry: deliveries };
      }
      const retry = new Set(result.retry);
      for (const [index, message] of batch.entries()) {
        if (retry.has(deliveries[index]!)) message.nak(result.retryDelayMs ?? connectRetryDelayMs);
        else message.ack();
      }
    }
    // Stopped with messages fetched but not handled: hand them back at once.
    for (const message of queue.splice(0)) message.nak();
    state.room?.();
    await reader;
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

  /** Connects, retrying until the broker is reachable; true when it was not at the first try. */
  async #connectUntilReady(): Promise<boolean> {
    let warned = false;
    while (!this.#closed) {
      let connection: NatsConnection | undefined;
      try {
        connection = await connect({
          servers: this.#options.url.split(','),
          ...this.#credentials,
          name: this.#options.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: connectRetryDelayMs,
          timeout: 2000,
        });
        await this.#ensureStream(connection);
        if (this.#closed) {
          await connection.close();
          return false;
        }
        this.#connection = connection;
        this.#js = jetstream(connection);
        void this.#watchStatus(connection);
        this.#logger.info({ url: this.#options.url, stream: this.#options.stream }, 'connected to NATS');
        return warned;
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
    return false;
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

  /** Connected to NATS now (the stream made); false while the client reconnects. */
  connected(): boolean {
    return this.#reachable && !this.#closed;
  }

  async #watchStatus(connection: NatsConnection): Promise<void> {
    this.#reachable = true;
    for await (const status of connection.status()) {
      if (status.type === 'disconnect') {
        this.#reachable = false;
        this.#logger.warn('disconnected from NATS; reconnecting');
      }
      if (status.type === 'reconnect') {
        this.#reachable = true;
        this.#logger.info('reconnected to NATS');
        this.#notifyReconnect();
      }
    }
    this.#reachable = false;
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
