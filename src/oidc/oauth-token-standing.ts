import { errors, type Provider } from 'oidc-provider';
import type { OAuthTokenStanding } from '../tokens/principal.js';
import { isFirstParty } from './client-metadata.js';

/**
 * What the service knows now about the client behind an OAuth access token, from the per-node client
 * cache (src/oidc/client-cache.ts: a client disabled anywhere is seen within seconds): a disabled or
 * deleted client's tokens are no longer accepted.
 */
export function oauthTokenStanding(provider: Provider): OAuthTokenStanding {
  return {
    async check({ clientId }) {
      let client;
      try {
        client = await provider.Client.find(clientId);
      } catch (error) {
        // A client whose stored metadata the engine refuses is no client to accept tokens of.
        if (error instanceof errors.OIDCProviderError) return undefined;
        throw error;
      }
      return client ? { firstParty: isFirstParty(client as never) } : undefined;
    },
  };
}
