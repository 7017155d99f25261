import { z } from 'zod';
import { systemClock, type Clock } from '../../clock.js';

const discoverySchema = z.object({ issuer: z.string(), token_endpoint: z.url() });
const tokenResponseSchema = z.object({
  access_token: z.string().min(1),
  expires_in: z.number().positive(),
});

export interface ServiceTokenProviderOptions {
  /** The identity service's issuer (its discovery document names the token endpoint). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Space-separated service scopes, e.g. "service:platform.reference-data.read". */
  scope: string;
  fetch?: typeof fetch;
  /** When a token is due for renewal is judged by this clock (default: the system's). */
  clock?: Clock;
}

/**
 * A client-credentials access token for a domain service, fetched from the token endpoint and reused
 * until shortly before it expires (service tokens live 5 minutes). The token endpoint is the one the
 * issuer's discovery document names, taken only when that document names the issuer it was fetched
 * for (OpenID Connect Discovery 1.0 §4.3): the client's secret goes to no other server's endpoint.
 */
export function serviceTokenProvider(options: ServiceTokenProviderOptions): () => Promise<string> {
  const doFetch = options.fetch ?? fetch;
  const clock = options.clock ?? systemClock;
  let cached: { token: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;
  let tokenEndpoint: string | undefined;

  const obtain = async (): Promise<string> => {
    tokenEndpoint ??= await discoveredTokenEndpoint();
    const response = await doFetch(tokenEndpoint, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: options.scope }),
    });
    if (!response.ok) throw new Error(`token endpoint answered ${response.status}: ${await response.text()}`);
    const body = tokenResponseSchema.parse(await response.json());
    cached = {
      token: body.access_token,
      renewAt: clock.now().getTime() + Math.max(body.expires_in - 30, 1) * 1000,
    };
    return body.access_token;
  };

  async function discoveredTokenEndpoint(): Promise<string> {
    const issuer = options.issuer.replace(/\/+$/, '');
    const address = `${issuer}/.well-known/openid-configuration`;
    const response = await doFetch(new URL(address));
    if (!response.ok) throw new Error(`discovery at ${address} answered ${response.status}`);
    const discovery = discoverySchema.parse(await response.json());
    if (discovery.issuer !== issuer && discovery.issuer !== options.issuer) {
      throw new Error(
        `discovery at ${address} names the issuer ${discovery.issuer}: not taking its token endpoint`,
      );
    }
    return discovery.token_endpoint;
  }

  return async () => {
    if (cached && clock.now().getTime() < cached.renewAt) return cached.token;
    pending ??= obtain().finally(() => {
      pending = undefined;
    });
    return pending;
  };
}
