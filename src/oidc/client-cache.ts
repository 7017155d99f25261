import type { Client, Provider } from 'oidc-provider';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import type { Logger } from '../logger.js';
import { isValidClientId } from './client-authentication.js';
import { clientRowVersion, onClientChange } from './models/oauth-client.js';

/** The bound for what the change feed can't see (a row deleted by hand, not by deleteClient). */
const clientMaxAgeMs = 10 * 60_000;
/** Changes are looked for this far before the previous look: a transaction may commit after its updated_at. */
const changeFeedOverlapMs = 10_000;

interface CachedClient {
  /**
   * The lookup while it is under way. Once it settles only the Client is kept: a promise made during
   * a request carries that request's context (AsyncLocalStorage), so a cached promise would keep one
   * request's objects alive per cached client, tens of kilobytes each.
   */
  loading: Promise<Client | undefined> | undefined;
  client: Client | undefined;
  /**
   * The row version read just before the engine built the client, so the client is of this version
   * or a newer one: null when there was no row, undefined while the read is under way.
   */
  version: string | null | undefined;
  until: number;
}

/**
 * The engine rebuilds (and re-validates) a Client object whenever one is not among the last 100 it
 * used, and reads the adapter on every request. With thousands of clients, that is most requests. This
 * seam keeps built clients per node, keyed by client_id, until they change: every few seconds one
 * indexed query on oauth_clients.updated_at tells which rows changed and their versions now, and a
 * client built from an older version (or whose version is not known yet) is dropped. A change reported
 * again by the next looks (they overlap) drops nothing more once the new version is cached.
 *
 * The answer "no such client" is remembered too (a misconfigured client asks again and again), but
 * apart: anyone can send valid-looking ids no client has, at any rate, and in one bounded map they
 * made it full, so that it was cleared, every client of every node with it, every 20,000 requests.
 * Each map is bounded and cleared when full on its own, so strangers' ids only ever evict each other.
 */
export function installClientCache(
  provider: Provider,
  deps: {
    db: Queryable;
    logger: Logger;
    clock: Clock;
    /**
     * How often to ask the database which clients changed (another node or worker disabled one): a
     * change made elsewhere takes effect here within this time; one made through this process, at once.
     */
    changePollMilliseconds: number;
    /** How many ids with a row (clients, disabled ones too) the node keeps. */
    maxClients: number;
    /** How many ids without a row the node remembers as such. */
    maxUnknownIds: number;
  },
): () => void {
  const { db, logger, clock, changePollMilliseconds, maxClients, maxUnknownIds } = deps;
  const Clients = provider.Client as unknown as { find(id: string): Promise<Client | undefined> };
  const find = Clients.find.bind(Clients);
  /** Ids whose row was there (a client, or a disabled client: the engine's undefined). */
  const clients = new Map<string, CachedClient>();
  /** Ids that had no row: anyone can fill this one. */
  const unknownIds = new Map<string, CachedClient>();
  /**
   * Lookups under way, until they settle into one of the two maps. Bounded by the requests a process
   * holds at once (src/http/requests-in-flight.ts), each asking for one client at a time.
   */
  const lookups = new Map<string, CachedClient>();
  const cached = (id: string) => clients.get(id) ?? unknownIds.get(id) ?? lookups.get(id);
  const forget = (id: string) => {
    clients.delete(id);
    unknownIds.delete(id);
    lookups.delete(id);
  };
  const forgetAll = () => {
    clients.clear();
    unknownIds.clear();
    lookups.clear();
  };
  /** Keeps a settled lookup in the map of its kind, which is cleared first when full. */
  const keep = (id: string, entry: CachedClient) => {
    const hadRow = entry.client !== undefined || entry.version !== null;
    const [map, bound] = hadRow ? [clients, maxClients] : [unknownIds, maxUnknownIds];
    if (map.size >= bound) map.clear();
    map.set(id, entry);
  };
  Clients.find = (id: string) => {
    // No client has such an id (client-authentication.ts), and remembering one would let a stranger
    // fill the cache with long ids until the heap runs out: the bounds limit their number only.
    if (typeof id !== 'string' || !isValidClientId(id)) return Promise.resolve(undefined);
    const known = cached(id);
    if (known && known.until > clock.now().getTime()) {
      return known.loading ?? Promise.resolve(known.client);
    }
    forget(id);
    const entry: CachedClient = {
      loading: undefined,
      client: undefined,
      version: undefined,
      until: clock.now().getTime() + clientMaxAgeMs,
    };
    entry.loading = clientRowVersion(db, id)
      .then((found) => {
        entry.version = found ?? null;
        return find(id);
      })
      .then(
        (client) => {
          entry.client = client;
          entry.loading = undefined;
          // Not kept if a change dropped it meanwhile: it may have been built from the row before.
          if (lookups.get(id) === entry) {
            lookups.delete(id);
            keep(id, entry);
          }
          return client;
        },
        (error: unknown) => {
          // A failed lookup is not remembered.
          if (lookups.get(id) === entry) lookups.delete(id);
          throw error;
        },
      );
    lookups.set(id, entry);
    return entry.loading;
  };

  let lastLook: Date | undefined;
  const dropChanged = async () => {
    // The first look only takes the database's time (the cache is cleared below), so it asks for little.
    const since = new Date((lastLook?.getTime() ?? clock.now().getTime()) - changeFeedOverlapMs);
    // A deleted client has no row to report: its deletion is recorded (version null, as for no row).
    const { rows } = (await db.raw(
      `select now() as looked_at,
              coalesce(array_agg(client_id), '{}') as changed,
              coalesce(array_agg(version), '{}') as versions
         from (select client_id, xmin::text as version from oauth_clients where updated_at > ?
               union all
               select client_id, null from deleted_oauth_clients where deleted_at > ?) as changes`,
      [since, since],
    )) as { rows: [{ looked_at: Date; changed: string[]; versions: (string | null)[] }] };
    // Without a previous look (the first one, or every one so far failed), nothing cached can be trusted.
    if (!lastLook) forgetAll();
    const { changed, versions } = rows[0];
    // A client created after its id was looked up (version null then) is reported with its version.
    changed.forEach((clientId, index) => {
      if (cached(clientId)?.version !== versions[index]) forget(clientId);
    });
    lastLook = rows[0].looked_at;
  };
  let looking: Promise<void> | undefined;
  const look = () => {
    looking ??= dropChanged()
      .catch((error: unknown) => {
        // Nothing is dropped this time; the next look covers the same changes (it starts further back).
        logger.warn({ err: error }, 'could not read which OAuth clients changed');
      })
      .finally(() => {
        looking = undefined;
      });
  };
  const poll = setInterval(look, changePollMilliseconds);
  poll.unref();
  look();

  const stopListening = onClientChange(forget);
  return () => {
    clearInterval(poll);
    stopListening();
  };
}
