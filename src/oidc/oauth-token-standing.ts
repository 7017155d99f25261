import { errors, type Provider } from 'oidc-provider';
import type { OAuthTokenStanding } from '../tokens/principal.js';
import type { ActiveUserCache } from './active-user-cache.js';
import { allowedScopesOf, isFirstParty, tokensNotBeforeOf } from './client-metadata.js';
import { refusedByNotBefore } from './models/oauth-client.js';
import type { RevokedGrants } from './revoked-grants.js';

/**
 * What the service knows now about an OAuth access token beyond its signature, all from memory: its
 * grant revoked (src/oidc/revoked-grants.ts), its client disabled or deleted (the per-node client
 * cache, src/oidc/client-cache.ts) or disabled since it was issued, its user disabled
 * (src/oidc/active-user-cache.ts), its client first-party, the scopes its client is allowed now. A
 * change made anywhere is seen by every node within seconds.
 */
export function oauthTokenStanding(
  provider: Provider,
  revokedGrants: RevokedGrants,
  activeUsers: ActiveUserCache,
): OAuthTokenStanding {
  return {
    async check({ clientId, grantId, userId, issuedAt }) {
      if (grantId !== undefined && revokedGrants.isRevoked(grantId)) return undefined;
      let client;
      try {
        client = await provider.Client.find(clientId);
      } catch (error) {
        // A client whose stored metadata the engine refuses is no client to accept tokens of.
        if (error instanceof errors.OIDCProviderError) return undefined;
        throw error;
      }
      if (!client) return undefined;
      // Disabled since, or a scope taken and given back: what it held before stays taken.
      if (refusedByNotBefore(issuedAt, tokensNotBeforeOf(client as never))) return undefined;
      // A disabled user's tokens act nowhere: not at introspection, and not as an administrator.
      if (userId !== undefined && !(await activeUsers.isActive(userId))) return undefined;
      return {
        firstParty: isFirstParty(client as never),
        allowedScopes: allowedScopesOf(client as never),
      };
    },
  };
}
