// A host application with routes of its own that mounts the identity service beside them. In your
// project: `import { ... } from 'identity-service'` (here the source, so CI runs it without a build).
import http from 'node:http';
import Koa from 'koa';
import {
  createIdentityService,
  generateRsaPrivateKeyPem,
  loadConfig,
  migrateToLatest,
  openDatabase,
  type IdentityService,
} from '../../src/index.js';

/** The host's own routes, then the identity service for its paths; anything else stays the host's. */
export function createHostApp(identity: IdentityService): Koa {
  const host = new Koa();
  // The engine signs its cookies with the app's keys: the host's app must have the service's.
  host.keys = identity.app.keys;
  host.use(async (ctx, next) => {
    if (ctx.path === '/') ctx.body = 'the host app';
    else if (ctx.path === '/api/v2/other') ctx.body = { from: 'host' };
    else if (ctx.path.startsWith('/assets/host/')) ctx.body = `host asset ${ctx.path}`;
    else await next();
  });
  host.use(identity.middleware);
  // Reached only for paths the identity service doesn't own.
  host.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: 'host_not_found' };
  });
  return host;
}

/**
 * `npx tsx examples/koa-host/host.ts`: the host on http://127.0.0.1:4000, the identity service under
 * /idp (its issuer's path: it answers there and nowhere else), an in-memory database.
 */
async function main(): Promise<void> {
  const issuer = 'http://127.0.0.1:4000/idp';
  const database = await openDatabase({});
  await migrateToLatest(database.db);
  const identity = await createIdentityService({
    config: loadConfig({ ISSUER: issuer }),
    database,
    secrets: {
      oidcPrivateKey: generateRsaPrivateKeyPem(),
      mainAuthPrivateKey: generateRsaPrivateKeyPem(),
      cookieKeys: [generateRsaPrivateKeyPem().slice(40, 100)],
    },
  });
  http.createServer(createHostApp(identity).callback()).listen(4000, '127.0.0.1');
  console.warn(`host app on ${issuer}; discovery at ${issuer}/.well-known/openid-configuration`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
