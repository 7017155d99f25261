import crypto from 'node:crypto';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { ReferenceEntity } from '../events/platform-events.js';
import type { ReferenceEntry } from './entities.js';
import type { ListFilter } from './reference-data-repository.js';

/** One list, ready to send: the JSON body, its gzip form and the ETag (weak: same for both forms). */
export interface CachedList {
  body: Buffer;
  gzipped: Buffer;
  etag: string;
}

export interface ReferenceDataCacheOptions {
  /** Loads the live entries of an entity, in list order. */
  load: (entity: ReferenceEntity) => Promise<ReferenceEntry[]>;
  /**
   * A safety net only: events invalidate the cache; this bounds staleness should an event never
   * arrive (e.g. several nodes on the embedded bus).
   */
  maxAgeMs?: number;
  /** Filtered lists kept per entity (parent_key values are the caller's choice: bounded). */
  maxListsPerEntity?: number;
  /**
   * Reads of the database that `Cache-Control: no-cache` requests cause, at most one per this interval
   * per entity (default 250 ms): the requests arriving meanwhile share the next one.
   */
  minFreshLoadIntervalMs?: number;
}

interface EntityState {
  /**
   * Loads under way are kept as promises, settled ones as values: a promise made during a request
   * carries that request's context (AsyncLocalStorage) and would keep its objects alive. A load
   * settles into its slot only if the slot still holds it: an invalidation meanwhile wins.
   */
  entries?: ReferenceEntry[] | Promise<ReferenceEntry[]>;
  /** When the read behind `entries` began (performance.now()). */
  loadStartedAt: number;
  validSince: number;
  /** The database read that fresh requests wait for, until it begins (then any new one waits for the next). */
  nextFreshLoad?: Promise<void> | undefined;
  /** When the last read caused by fresh requests began. */
  lastFreshLoadAt: number;
  lists: Map<string, CachedList | Promise<CachedList>>;
}

const gzip = promisify(zlib.gzip);

/**
 * The per-node cache of the reference-data lists (GET /reference/<entity>): each answer is serialised
 * and compressed once and then served as bytes, which is what lets a 1,000-entry list be served
 * thousands of times a second. Invalidated per entity by platform.reference_data.changed (from any
 * node) and right after a local change.
 */
export class ReferenceDataCache {
  readonly #states = new Map<ReferenceEntity, EntityState>();
  readonly #maxAgeMs: number;
  readonly #maxLists: number;
  readonly #minFreshLoadIntervalMs: number;

  constructor(private readonly options: ReferenceDataCacheOptions) {
    this.#maxAgeMs = options.maxAgeMs ?? 60_000;
    this.#maxLists = options.maxListsPerEntity ?? 256;
    this.#minFreshLoadIntervalMs = options.minFreshLoadIntervalMs ?? 250;
  }

  /**
   * The list for this filter; `fresh`: built from a read of the database that began after this call
   * (and which refreshes the cache for everyone).
   */
  async list(entity: ReferenceEntity, filter: ListFilter, fresh = false): Promise<CachedList> {
    const state = this.#state(entity);
    if (fresh) await this.#loadedSince(entity, state, performance.now());
    else if (performance.now() - state.validSince > this.#maxAgeMs) this.invalidate(entity);
    const filterKey = `${filter.isActive ?? ''}|${filter.parentKey ?? ''}`;
    const cached = state.lists.get(filterKey);
    if (cached) return cached;
    const loading = this.#render(state, entity, filter);
    if (state.lists.size >= this.#maxLists) state.lists.delete(state.lists.keys().next().value!);
    state.lists.set(filterKey, loading);
    loading.then(
      (rendered) => {
        if (state.lists.get(filterKey) === loading) state.lists.set(filterKey, rendered);
      },
      // A failed load is not kept: the next request tries again.
      () => {
        if (state.lists.get(filterKey) === loading) state.lists.delete(filterKey);
      },
    );
    return loading;
  }

  /**
   * Waits for entries read from the database after `since`. Any reader may ask for that (a token is
   * enough), so each such request must not read the entity and rebuild its lists again: that dropped
   * everyone's cached lists at every request, and ten connections asking so slowed every other request
   * of the node tenfold. Requests share one read, and such reads begin at most once per
   * `minFreshLoadIntervalMs`; each request still gets a read that began after it arrived.
   */
  async #loadedSince(entity: ReferenceEntity, state: EntityState, since: number): Promise<void> {
    if (state.entries !== undefined && state.loadStartedAt >= since) {
      await state.entries;
      return;
    }
    let next = state.nextFreshLoad;
    if (!next) {
      const wait = Math.max(0, state.lastFreshLoadAt + this.#minFreshLoadIntervalMs - performance.now());
      next = new Promise((resolve) => setTimeout(resolve, wait)).then(async () => {
        // Begun: requests arriving from now on wait for the next read (this one began before them).
        if (state.nextFreshLoad === next) state.nextFreshLoad = undefined;
        state.lastFreshLoadAt = performance.now();
        this.invalidate(entity);
        await this.#entries(state, entity);
      });
      state.nextFreshLoad = next;
    }
    await next;
  }

  /** Forget the entity's lists: the next request reads the database. */
  invalidate(entity: ReferenceEntity): void {
    const state = this.#state(entity);
    state.entries = undefined;
    state.lists = new Map();
    state.validSince = performance.now();
  }

  clear(): void {
    for (const entity of this.#states.keys()) this.invalidate(entity);
  }

  #state(entity: ReferenceEntity): EntityState {
    let state = this.#states.get(entity);
    if (!state) {
      state = {
        validSince: performance.now(),
        lists: new Map(),
        loadStartedAt: Number.NEGATIVE_INFINITY,
        lastFreshLoadAt: Number.NEGATIVE_INFINITY,
      };
      this.#states.set(entity, state);
    }
    return state;
  }

  async #render(state: EntityState, entity: ReferenceEntity, filter: ListFilter): Promise<CachedList> {
    return render((await this.#entries(state, entity)).filter(matches(filter)));
  }

  #entries(state: EntityState, entity: ReferenceEntity): ReferenceEntry[] | Promise<ReferenceEntry[]> {
    if (!state.entries) {
      state.loadStartedAt = performance.now();
      const loading = this.options.load(entity);
      state.entries = loading;
      loading.then(
        (entries) => {
          if (state.entries === loading) state.entries = entries;
        },
        () => {
          if (state.entries === loading) state.entries = undefined;
        },
      );
    }
    return state.entries;
  }
}

function matches(filter: ListFilter) {
  return (entry: ReferenceEntry) =>
    (filter.isActive === undefined || entry.is_active === filter.isActive) &&
    (filter.parentKey === undefined || ('parent_key' in entry && entry.parent_key === filter.parentKey));
}

async function render(items: ReferenceEntry[]): Promise<CachedList> {
  const body = Buffer.from(JSON.stringify({ items }));
  const etag = `W/"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
  return { body, gzipped: await gzip(body), etag };
}
