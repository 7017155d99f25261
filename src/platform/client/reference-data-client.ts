import { z } from 'zod';
import type { EventSource, EventSubscription, Unsubscribe } from '../../events/event-bus.js';
import type { Envelope } from '../../events/envelope.js';
import { referenceDataChanged, referenceEntities, type ReferenceEntity } from '../events/platform-events.js';
import { definitionOf, entrySchemas, type ReferenceEntry } from '../reference-data/entities.js';

export interface ReferenceDataClientOptions {
  /** The identity service's issuer URL, e.g. https://id.example.com or https://example.com/idp. */
  baseUrl: string;
  /**
   * A bearer token for the read endpoints: a service token with service:platform.reference-data.read
   * (see serviceTokenProvider) or a user token.
   */
  accessToken: () => string | Promise<string>;
  /** Where platform events arrive: a NatsJetStreamBus, or the service's own bus in-process. */
  events: EventSource;
  fetch?: typeof fetch;
  logger?: { warn(object: object, message: string): void };
  /** How many recent messageIds are remembered to drop re-deliveries. */
  dedupWindow?: number;
  /** First retry delay after a failed load (doubles up to 30 s). */
  retryDelayMs?: number;
}

export interface ReferenceDataChange {
  entity: ReferenceEntity;
  /** start: first load; event: a platform.reference_data.changed; resync: after a reconnect. */
  reason: 'start' | 'event' | 'resync';
  messageId?: string;
}

interface EntityCache {
  entries: readonly ReferenceEntry[];
  byKey: Map<string, ReferenceEntry>;
  etag?: string;
  refreshing?: Promise<void>;
  /** An event arrived while a refresh was running: refresh once more after it. */
  again?: ReferenceDataChange;
}

/**
 * The reference data a domain service needs, kept locally (spec: domains cache reference data and
 * refresh on platform.reference_data.changed). Loaded over HTTP from the read endpoints; an event for
 * an entity reloads that entity's list; after a reconnect to the broker everything is reloaded, since
 * events may have been missed. Re-delivered events (same messageId) are ignored.
 *
 *   const client = new ReferenceDataClient({ baseUrl, accessToken, events: natsBus });
 *   await client.start();
 *   client.get('subject', course.subjectKey)?.title.en;
 */
export class ReferenceDataClient {
  readonly #options: ReferenceDataClientOptions;
  readonly #caches = new Map<ReferenceEntity, EntityCache>();
  readonly #seen = new Set<string>();
  readonly #listeners = new Set<(change: ReferenceDataChange) => void>();
  #subscription: EventSubscription | undefined;
  #stopReconnect: Unsubscribe | undefined;
  #closed = false;

  constructor(options: ReferenceDataClientOptions) {
    this.#options = options;
  }

  /** Subscribes, then loads every entity; resolves when the cache is complete. */
  async start(): Promise<void> {
    // Subscribe first: a change committed during the first load is then not missed.
    this.#subscription = this.#options.events.subscribe('platform.reference_data.changed', (envelope) =>
      this.#onEvent(envelope),
    );
    this.#stopReconnect = this.#options.events.onReconnect(() => void this.resync());
    await this.#subscription.ready;
    await Promise.all(referenceEntities.map((entity) => this.#refresh(entity, { entity, reason: 'start' })));
  }

  /** The entity's entries in list order (display_order); `activeOnly` for what may be newly assigned. */
  list<Entity extends ReferenceEntity>(
    entity: Entity,
    options: { activeOnly?: boolean } = {},
  ): readonly ReferenceEntry<Entity>[] {
    const entries = (this.#caches.get(entity)?.entries ?? []) as readonly ReferenceEntry<Entity>[];
    return options.activeOnly ? entries.filter((entry) => entry.is_active) : entries;
  }

  get<Entity extends ReferenceEntity>(entity: Entity, key: string): ReferenceEntry<Entity> | undefined {
    return this.#caches.get(entity)?.byKey.get(key) as ReferenceEntry<Entity> | undefined;
  }

  /** Called after the cache of an entity was reloaded. */
  onChange(listener: (change: ReferenceDataChange) => void): Unsubscribe {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reloads every entity (after a reconnect: events may have been lost meanwhile). */
  async resync(): Promise<void> {
    await Promise.all(referenceEntities.map((entity) => this.#refresh(entity, { entity, reason: 'resync' })));
  }

  close(): void {
    this.#closed = true;
    this.#subscription?.unsubscribe();
    this.#stopReconnect?.();
    this.#listeners.clear();
  }

  #onEvent(envelope: Envelope): Promise<void> | void {
    if (this.#seen.has(envelope.messageId)) return;
    this.#remember(envelope.messageId);
    const data = referenceDataChanged.safeParse(envelope.data);
    if (!data.success) {
      this.#options.logger?.warn(
        { messageId: envelope.messageId },
        'malformed reference-data event; resyncing',
      );
      return this.resync();
    }
    return this.#refresh(data.data.entity, {
      entity: data.data.entity,
      reason: 'event',
      messageId: envelope.messageId,
    });
  }

  #remember(messageId: string): void {
    this.#seen.add(messageId);
    if (this.#seen.size > (this.#options.dedupWindow ?? 10_000)) {
      this.#seen.delete(this.#seen.values().next().value!);
    }
  }

  /** One reload of an entity at a time; a request during one runs once more after it. */
  #refresh(entity: ReferenceEntity, change: ReferenceDataChange): Promise<void> {
    const cache = this.#cacheOf(entity);
    if (cache.refreshing) {
      cache.again = change;
      return cache.refreshing;
    }
    cache.refreshing = (async () => {
      let next: ReferenceDataChange | undefined = change;
      while (next && !this.#closed) {
        cache.again = undefined;
        await this.#loadWithRetry(entity, cache);
        for (const listener of this.#listeners) listener(next);
        next = cache.again;
      }
    })().finally(() => {
      cache.refreshing = undefined;
    });
    return cache.refreshing;
  }

  async #loadWithRetry(entity: ReferenceEntity, cache: EntityCache): Promise<void> {
    let delay = this.#options.retryDelayMs ?? 500;
    for (;;) {
      try {
        await this.#load(entity, cache);
        return;
      } catch (error) {
        if (this.#closed) return;
        this.#options.logger?.warn({ err: error, entity }, 'loading reference data failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
        delay = Math.min(delay * 2, 30_000);
      }
    }
  }

  async #load(entity: ReferenceEntity, cache: EntityCache): Promise<void> {
    // Appended, not resolved: a base with a path (https://host/idp) keeps it.
    const base = this.#options.baseUrl.replace(/\/+$/, '');
    const url = new URL(`${base}/api/v2/platform/reference/${definitionOf(entity).segment}`);
    const headers: Record<string, string> = {
      authorization: `Bearer ${await this.#options.accessToken()}`,
      // Read past the answering node's cache: it may not have heard the event yet.
      'cache-control': 'no-cache',
    };
    if (cache.etag) headers['if-none-match'] = cache.etag;
    const response = await (this.#options.fetch ?? fetch)(url, { headers });
    if (response.status === 304) return;
    if (!response.ok) throw new Error(`GET ${url.pathname} answered ${response.status}`);
    const body = z.object({ items: z.array(entrySchemas[entity]) }).parse(await response.json());
    cache.entries = body.items;
    cache.byKey = new Map(body.items.map((entry) => [entry.key, entry]));
    cache.etag = response.headers.get('etag') ?? undefined;
  }

  #cacheOf(entity: ReferenceEntity): EntityCache {
    let cache = this.#caches.get(entity);
    if (!cache) {
      cache = { entries: [], byKey: new Map() };
      this.#caches.set(entity, cache);
    }
    return cache;
  }
}
