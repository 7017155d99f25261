import Router from '@koa/router';
import type { PublishedKeySet } from '../../keys/published-key-set.js';
import { oauthRoutes } from '../provider.js';

/**
 * GET /.well-known/jwks.json: the public keys of both purposes, plus replaced keys for 24 hours, the
 * same on every node (read from the signing_keys table).
 */
export function jwksRoutes(keySet: PublishedKeySet): Router {
  const router = new Router();
  router.get(oauthRoutes.jwks, async (ctx) => {
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'application/jwk-set+json';
    ctx.body = await keySet.jwksJson();
  });
  return router;
}
