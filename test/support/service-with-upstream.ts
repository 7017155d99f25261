import { freePort } from './free-port.js';
import { startTestService, type TestService, type TestServiceOptions } from './test-service.js';
import { startUpstreamProvider, type UpstreamProvider } from './upstream-provider.js';

/**
 * Our service with one third-party provider, `upstream` ("Upstream ID"): a real OpenID Connect provider
 * on a loopback port (upstream-provider.ts). The upstream must know our callback address before it
 * starts, so the service's port is picked first and the service listens on it after.
 */
export async function startServiceWithUpstream(
  options: Omit<TestServiceOptions, 'port' | 'oauthProviders'> & { upstreamScopes?: string[] } = {},
): Promise<{ service: TestService; upstream: UpstreamProvider }> {
  const { upstreamScopes = ['openid', 'email', 'phone', 'profile'], ...serviceOptions } = options;
  const port = await freePort();
  const upstream = await startUpstreamProvider({
    redirectUri: `http://127.0.0.1:${port}/oauth/providers/upstream/callback`,
  });
  const service = await startTestService({
    ...serviceOptions,
    port,
    oauthProviders: [
      {
        id: 'upstream',
        name: 'Upstream ID',
        issuer: upstream.issuer,
        clientId: upstream.clientId,
        clientSecret: upstream.clientSecret,
        scopes: upstreamScopes,
      },
    ],
  });
  return { service, upstream };
}
