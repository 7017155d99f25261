import type { Provider } from 'oidc-provider';
import { clientSecretMatches } from './models/oauth-client.js';

/**
 * Client secrets are stored as SHA-256 hashes; the engine's `client_secret` metadata carries that hash.
 * Overriding compareClientSecret (an official override point) makes the engine hash what the client
 * presents and compare in constant time. Consequence: no client_secret_jwt and no HS* algorithms for
 * clients, which need the plaintext secret as a key.
 */
export function installClientSecretHashing(provider: Provider): void {
  provider.Client.prototype.compareClientSecret = function compareClientSecret(actual: string) {
    const stored = (this as { clientSecret?: string }).clientSecret;
    return Promise.resolve(
      typeof stored === 'string' && typeof actual === 'string' && clientSecretMatches(actual, stored),
    );
  };
}
