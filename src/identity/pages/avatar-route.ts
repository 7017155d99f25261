import Router from '@koa/router';
import type { Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { findAvatar } from '../users/avatars.js';

/**
 * GET /avatars/<id>: an uploaded avatar, the address of the `picture` claim. Public, as a picture claim
 * must be for the client to show it; the id is random, so avatars can't be listed. An address never
 * changes content (a new upload is a new id): cached for a year.
 */
export function avatarRoutes(db: Queryable): Router {
  const router = new Router();
  router.get('/avatars/:id', async (ctx) => {
    const avatar = await findAvatar(db, ctx.params.id!);
    if (!avatar) throw new ApiError(404, 'not_found', 'No such avatar.');
    ctx.type = avatar.contentType;
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    ctx.body = avatar.image;
  });
  return router;
}
