// The service alone in its own process for the platform benchmark (the load generator runs elsewhere):
// DATABASE_URL (migrated and seeded by the caller) and PORT from the environment. Prints one JSON line
// with the base URL and a reader's access token, then serves until SIGTERM.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config.js';
import { insertSession } from '../src/identity/sessions/sessions.js';
import { insertUser } from '../src/identity/users/user.js';
import { generateRsaPrivateKeyPem } from '../src/keys/development-secrets.js';
import { createLogger } from '../src/logger.js';
import { createIdentityService } from '../src/service.js';
import { issueMainAuthAccessToken } from '../src/tokens/main-auth-access-token.js';

const port = Number(process.env.PORT);
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'development',
  ISSUER: `http://127.0.0.1:${port}`,
  LOG_LEVEL: 'warn',
});
const service = await createIdentityService({
  config,
  logger: createLogger(config.logLevel),
  secrets: {
    oidcPrivateKey: generateRsaPrivateKeyPem(),
    mainAuthPrivateKey: generateRsaPrivateKeyPem(),
    cookieKeys: [crypto.randomBytes(32).toString('hex')],
  },
});
const server = http.createServer(service.app.callback());
server.keepAliveTimeout = 65_000;
await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

const user = await insertUser(service.db, {
  email: `bench-${crypto.randomUUID()}@example.com`,
  emailVerified: true,
});
// A main-auth token is accepted only while its session is live.
const session = await insertSession(
  service.db,
  {
    id: crypto.randomUUID(),
    refreshTokenId: crypto.randomUUID(),
    userId: user.id,
    userAgent: 'bench',
    ipAddress: '127.0.0.1',
    browserName: '',
    authMethod: 'pwd',
  },
  new Date(),
);
const { token } = await issueMainAuthAccessToken(
  service.keys.mainAuth,
  { issuer: config.issuer, audience: config.apiAudience },
  {
    userId: user.id,
    tokenId: crypto.randomUUID(),
    sessionId: session.id,
    authMethod: 'pwd',
    authTime: new Date(),
    roles: [],
    permissions: [],
  },
  new Date(),
);
// The ceiling on this machine right now: a bare node:http server sending the same cached bytes, no
// routing, no authentication.
const list = await service.platform.referenceData.cache.list('subject', {});
const bare = http.createServer((request, response) => {
  response.setHeader('content-type', 'application/json; charset=utf-8');
  response.setHeader('etag', list.etag);
  if (request.headers['if-none-match'] === list.etag) {
    response.statusCode = 304;
    response.end();
    return;
  }
  const gzip = /\bgzip\b/.test(request.headers['accept-encoding'] ?? '');
  if (gzip) response.setHeader('content-encoding', 'gzip');
  response.end(gzip ? list.gzipped : list.body);
});
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;

process.stdout.write(`${JSON.stringify({ url: config.issuer, token, bareUrl })}\n`);

process.on('SIGTERM', () => {
  server.closeAllConnections();
  bare.closeAllConnections();
  bare.close();
  server.close(() => void service.close().then(() => process.exit(0)));
});
