// The ceiling of bench/oauth.ts: a bare oidc-provider with an in-memory adapter and the same token
// format as the service (RS256 JWT access tokens through a resource server, RSA-2048; an RS256 id_token
// and a rotated opaque refresh token on refresh). Two clients: a confidential one for client_credentials,
// and a public user-flow client whose refresh tokens GET /bench/refresh-tokens?count=N mints directly in
// the store (no login: the bench measures the refresh grant, not how the chain began).
import crypto from 'node:crypto';
import http from 'node:http';
import { Provider, type Adapter, type AdapterPayload } from 'oidc-provider';

const port = Number(process.env.PORT ?? 4000);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const audience = 'urn:ecosystem:api';
const userScope = 'openid profile email';

/**
 * The engine's own memory adapter is an LRU of 1,000 entries: a refresh storm evicts live tokens. This
 * one keeps everything for the few seconds a bench lasts (expiry honoured on read).
 */
const store = new Map<string, { payload: AdapterPayload; expiresAt?: number }>();
const grantMembers = new Map<string, string[]>();
class InMemoryAdapter implements Adapter {
  constructor(private readonly model: string) {}
  private key(id: string) {
    return `${this.model}:${id}`;
  }
  async upsert(id: string, payload: AdapterPayload, expiresIn?: number) {
    const key = this.key(id);
    store.set(key, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
    if (payload.grantId)
      grantMembers.set(payload.grantId, [...(grantMembers.get(payload.grantId) ?? []), key]);
  }
  async find(id: string) {
    const entry = store.get(this.key(id));
    if (!entry || (entry.expiresAt !== undefined && entry.expiresAt < Date.now())) return undefined;
    return entry.payload;
  }
  async findByUid(uid: string) {
    for (const [key, entry] of store) {
      if (key.startsWith(`${this.model}:`) && entry.payload.uid === uid) return entry.payload;
    }
    return undefined;
  }
  async findByUserCode() {
    return undefined;
  }
  async consume(id: string) {
    const entry = store.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string) {
    store.delete(this.key(id));
  }
  async revokeByGrantId(grantId: string) {
    for (const key of grantMembers.get(grantId) ?? []) store.delete(key);
    grantMembers.delete(grantId);
  }
}

const provider = new Provider(issuer, {
  adapter: InMemoryAdapter,
  clients: [
    {
      client_id: 'bench',
      client_secret: 'bench-secret-bench-secret-bench-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
    {
      client_id: 'bench-app',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: ['http://localhost:8080/callback'],
    },
  ],
  jwks: {
    keys: [{ ...(privateKey.export({ format: 'jwk' }) as object), kid: 'bench', alg: 'RS256', use: 'sig' }],
  },
  claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'] },
  findAccount: (_ctx, sub) => ({
    accountId: sub,
    claims: () => ({ sub, name: 'Bench User', email: `${sub}@example.com`, email_verified: true }),
  }),
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  ttl: { Grant: 2_592_000, RefreshToken: 2_592_000, AccessToken: 900, IdToken: 900, ClientCredentials: 300 },
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx) => ({
        scope:
          ctx.oidc.params?.grant_type === 'client_credentials' ? 'service:crm.aggregates.read' : userScope,
        audience,
        accessTokenTTL: 300,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});

/** A user-flow refresh token as a code exchange would have left it: its Grant, openid scopes, the API resource. */
async function mintRefreshToken(index: number): Promise<string> {
  const client = await provider.Client.find('bench-app');
  const accountId = `bench-user-${index % 20}`;
  const grant = new provider.Grant({ accountId, clientId: 'bench-app' });
  grant.addOIDCScope(userScope);
  grant.addResourceScope(audience, userScope);
  const grantId = await grant.save();
  const refreshToken = new provider.RefreshToken({
    accountId,
    client: client!,
    grantId,
    scope: userScope,
    resource: audience,
    gty: 'authorization_code',
    authTime: Math.floor(Date.now() / 1000),
  });
  return refreshToken.save();
}

const engine = provider.callback();
http
  .createServer((request, response) => {
    const url = new URL(request.url ?? '/', issuer);
    if (url.pathname !== '/bench/refresh-tokens') return engine(request, response);
    const count = Math.min(10_000, Number(url.searchParams.get('count') ?? 1));
    Promise.all(Array.from({ length: count }, (_, index) => mintRefreshToken(index))).then(
      (tokens) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(tokens));
      },
      (error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      },
    );
  })
  .listen(port, '127.0.0.1', () => console.log(`bare engine listening on ${issuer}`));

// Exits normally when the bench stops it, so a `--cpu-prof` run (BENCH_NODE_OPTIONS) writes its profile.
process.on('SIGTERM', () => process.exit(0));
