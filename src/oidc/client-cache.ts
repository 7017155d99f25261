import type { Client, Provider } from 'oidc-provider';
import type { Queryable } from '../db/database.js';
import type { Logger } from '../logger.js';
import { onClientChange } from './models/oauth-client.js';

/**
 * How often a node asks the database which clients changed (another node or worker disabled one): a
 * change made elsewhere takes effect here within this time. A change made through this process drops
 * the client at once.
 */
export const clientChangePollMs = 5_000;
/** The bound for what the change feed can't see (a row deleted by hand). */
const clientMaxAgeMs = 10 * 60_000;
/** Changes are looked for this far before the previous look: a transaction may commit after its updated_at. */
const changeFeedOverlapMs = 10_000;
const maxCachedClients = 20_000;

/**
 * The engine rebuilds (and re-validates) a Client object whenever one is not among the last 100 it
 * used, and reads the adapter on every request. With thousands of clients, that is most requests. This
 * seam keeps built clients per node, keyed by client_id, until they change: every few seconds one
 * indexed query on oauth_clients.updated_at tells which ones did.
 */
export function installClientCache(provider: Provider, db: Queryable, logger: Logger): () => void {
  const Clients = provider.Client as unknown as { find(id: string): Promise<Client | undefined> };
  const find = Clients.find.bind(Clients);
  const cache = new Map<string, { client: Promise<Client | undefined>; until: number }>();
  Clients.find = (id: string) => {
    const cached = cache.get(id);
    if (cached && cached.until > Date.now()) return cached.client;
    const client = find(id);
    if (cache.size >= maxCachedClients) cache.clear();
    cache.set(id, { client, until: Date.now() + clientMaxAgeMs });
    // A failed lookup is not remembered.
    client.catch(() => cache.delete(id));
    return client;
  };

  let lastLook: Date | undefined;
  const dropChanged = async () => {
    // The first look only takes the database's time (the cache is cleared below), so it asks for little.
    const since = new Date((lastLook?.getTime() ?? Date.now()) - changeFeedOverlapMs);
    const { rows } = (await db.raw(
      `select now() as looked_at, coalesce(array_agg(client_id), '{}') as changed
         from oauth_clients where updated_at > ?`,
      [since],
    )) as { rows: [{ looked_at: Date; changed: string[] }] };
    // Without a previous look (the first one, or every one so far failed), nothing cached can be trusted.
    if (!lastLook) cache.clear();
    else for (const clientId of rows[0].changed) cache.delete(clientId);
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
  const poll = setInterval(look, clientChangePollMs);
  poll.unref();
  look();

  const stopListening = onClientChange((clientId) => cache.delete(clientId));
  return () => {
    clearInterval(poll);
    stopListening();
  };
}
