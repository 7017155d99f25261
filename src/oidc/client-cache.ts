import type { Client, Provider } from 'oidc-provider';
import { onClientChange } from './models/oauth-client.js';

/**
 * How long a node keeps a client. A client disabled through this process is dropped at once; another
 * node's change shows here within this time.
 */
export const clientCacheTtlMs = 30_000;
const maxCachedClients = 20_000;

/**
 * The engine rebuilds (and re-validates) a Client object whenever one is not among the last 100 it
 * used, and reads the adapter on every request. With thousands of service clients, that is most
 * requests. This seam keeps built clients per node, keyed by client_id, for a few seconds.
 */
export function installClientCache(provider: Provider): () => void {
  const Clients = provider.Client as unknown as { find(id: string): Promise<Client | undefined> };
  const find = Clients.find.bind(Clients);
  const cache = new Map<string, { client: Promise<Client | undefined>; until: number }>();
  Clients.find = (id: string) => {
    const cached = cache.get(id);
    if (cached && cached.until > Date.now()) return cached.client;
    const client = find(id);
    if (cache.size >= maxCachedClients) cache.clear();
    cache.set(id, { client, until: Date.now() + clientCacheTtlMs });
    // A failed lookup is not remembered.
    client.catch(() => cache.delete(id));
    return client;
  };
  return onClientChange((clientId) => cache.delete(clientId));
}
