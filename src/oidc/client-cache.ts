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
const maxCachedClients = 20_000;

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
    changePollMs: number;
  },
): () => void {
  const { db, logger, clock, changePollMs } = deps;
  const Clients = provider.Client as unknown as { find(id: string): Promise<Client | undefined> };
  const find = Clients.find.bind(Clients);
  const cache = new Map<string, CachedClient>();
  Clients.find = (id: string) => {
    // No client has such an id (client-authentication.ts), and remembering one would let a stranger
    // fill the cache with long ids until the heap runs out: 20,000 entries bound their number only.
    if (typeof id !== 'string' || !isValidClientId(id)) return Promise.resolve(undefined);
    const cached = cache.get(id);
    if (cached && cached.until > clock.now().getTime()) {
      return cached.loading ?? Promise.resolve(cached.client);
    }
    if (cache.size >= maxCachedClients) cache.clear();
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
          return client;
        },
        (error: unknown) => {
          // A failed lookup is not remembered.
          if (cache.get(id) === entry) cache.delete(id);
          throw error;
        },
      );
    cache.set(id, entry);
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
    if (!lastLook) cache.clear();
    const { changed, versions } = rows[0];
    changed.forEach((clientId, index) => {
      if (cache.get(clientId)?.version !== versions[index]) cache.delete(clientId);
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
  const poll = setInterval(look, changePollMs);
  poll.unref();
  look();

  const stopListening = onClientChange((clientId) => cache.delete(clientId));
  return () => {
    clearInterval(poll);
    stopListening();
  };
}
