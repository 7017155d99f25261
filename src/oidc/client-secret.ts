import { Provider, type Client } from 'oidc-provider';
import { clientSecretMatches } from './models/oauth-client.js';

/** Whether `secret` is the secret of `client` (compared with its stored hash); never for a public client. */
export function clientSecretIsCorrect(client: Client, secret: string | undefined): boolean {
  const stored = (client as { clientSecret?: string }).clientSecret;
  return (
    typeof secret === 'string' &&
    secret !== '' &&
    client.clientAuthMethod !== 'none' &&
    typeof stored === 'string' &&
    clientSecretMatches(secret, stored)
  );
}

/** Per request: the client whose secret was found correct, and the secret presented. */
const provenInRequest = new WeakMap<object, { client: Client; secret: string }>();

/**
 * Records that `request`'s credentials (HTTP Basic) were found to be `client`'s, with `secret`, so
 * that nothing later in the same request (our introspection, the engine's client authentication)
 * hashes and compares them again.
 */
export function rememberProvenSecret(request: object, client: Client, secret: string): void {
  provenInRequest.set(request, { client, secret });
}

/** The client whose secret this request proved earlier, if any. */
export function clientProvenEarlier(request: object): Client | undefined {
  return provenInRequest.get(request)?.client;
}

/**
 * Client secrets are stored as SHA-256 hashes; the engine's `client_secret` metadata carries that hash.
 * Overriding compareClientSecret (an official override point) makes the engine hash what the client
 * presents and compare in constant time. Consequence: no client_secret_jwt and no HS* algorithms for
 * clients, which need the plaintext secret as a key. A secret the same request proved already (the
 * rate limits in front of the engine compare it) is not compared again, if it is the same value.
 */
export function installClientSecretHashing(provider: Provider): void {
  provider.Client.prototype.compareClientSecret = function compareClientSecret(actual: string) {
    const request = Provider.ctx;
    const proven = request ? provenInRequest.get(request) : undefined;
    if (proven?.client === this && proven.secret === actual) return Promise.resolve(true);
    return Promise.resolve(clientSecretIsCorrect(this, actual));
  };
}
