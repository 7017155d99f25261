import Router from '@koa/router';
import { renderPage } from '../../http/pages.js';

/**
 * GET /inbound-login.html: the landing page of an inbound login (docs/inbound-sso.md). Static: its
 * script reads the one-time login token from the fragment and posts it to /api/v2/identity/auth/inbound.
 */
export function inboundLoginPageRoutes(): Router {
  const router = new Router();
  router.get('/inbound-login.html', (ctx) => {
    renderPage(ctx, 'inbound-login', {});
  });
  return router;
}
