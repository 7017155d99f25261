import type { Context } from 'koa';
import type { Client, Provider } from 'oidc-provider';
import { clientProvenEarlier, clientSecretIsCorrect } from './client-secret.js';
import { OAuthError } from './oauth-error.js';

/**
 * HTTP Basic client authentication (RFC 6749 §2.3.1) for the OAuth endpoints we serve ourselves:
 * client_id and secret form-urlencoded inside the header, a confidential client, its secret compared
 * through the engine's Client (cached, secret hashed). Any failure: 401 invalid_client with a challenge.
 */
export async function authenticateClientWithBasic(ctx: Context, provider: Provider): Promise<Client> {
  // The rate limits in front compared the same header's secret already (client-rate-limits.ts).
  const proven = clientProvenEarlier(ctx);
  if (proven) return proven;
  const challenge = { 'WWW-Authenticate': `Basic realm="${provider.issuer}"` };
  const invalid = (description: string) => new OAuthError(401, 'invalid_client', description, challenge);
  const credentials = parseBasicCredentials(ctx.get('authorization'));
  if (!credentials?.secret) throw invalid('client authentication with HTTP Basic is required');
  if (!isValidClientId(credentials.clientId)) throw invalid('client authentication failed');
  const client = await provider.Client.find(credentials.clientId);
  if (!client || !clientSecretIsCorrect(client, credentials.secret)) {
    throw invalid('client authentication failed');
  }
  return client;
}

/**
 * Whether `clientId` can name a client at all: 1 to 100 characters (spec: client_id max 100) of
 * RFC 6749's VSCHAR (printable ASCII, Appendix A.1). Anything else is refused before it reaches a
 * lookup or a counter.
 */
export function isValidClientId(clientId: string): boolean {
  return /^[\x20-\x7E]{1,100}$/.test(clientId);
}

/**
 * client_id and secret of an `Authorization: Basic` header, each form-urlencoded (RFC 6749 §2.3.1);
 * undefined when the header is not that or names no client. The secret may be empty.
 */
export function parseBasicCredentials(header: string): { clientId: string; secret: string } | undefined {
  const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header.trim());
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return undefined;
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part.replace(/\+/g, '%20'));
    } catch {
      return undefined;
    }
  };
  const clientId = decode(decoded.slice(0, colon));
  // A secret that doesn't decode is no secret; the client is still named (rate limits count it).
  return clientId ? { clientId, secret: decode(decoded.slice(colon + 1)) ?? '' } : undefined;
}
