// The ceiling of bench/oauth.ts: a bare oidc-provider with its in-memory adapter, one static client,
// and the same token format (RS256 JWT access tokens through a resource server, RSA-2048).
import crypto from 'node:crypto';
import { Provider } from 'oidc-provider';

const port = Number(process.env.PORT ?? 4000);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const audience = 'urn:ecosystem:api';

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'bench',
      client_secret: 'bench-secret-bench-secret-bench-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ],
  jwks: {
    keys: [{ ...(privateKey.export({ format: 'jwk' }) as object), kid: 'bench', alg: 'RS256', use: 'sig' }],
  },
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      getResourceServerInfo: () => ({
        scope: 'service:crm.aggregates.read',
        audience,
        accessTokenTTL: 300,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
provider.listen(port, '127.0.0.1', () => console.log(`bare engine listening on ${issuer}`));
