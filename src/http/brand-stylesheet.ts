import Router from '@koa/router';
import type { Brand } from '../brand.js';

/**
 * GET /assets/brand.css: the configured primary colour as the pages' `--accent` (a stylesheet of its
 * own, because the Content-Security-Policy allows no inline style). Loaded after pages.css.
 */
export function brandStylesheetRoutes(brand: Brand): Router {
  const router = new Router();
  const css = `:root {\n  --accent: ${brand.primaryColor};\n}\n`;
  router.get('/assets/brand.css', (ctx) => {
    ctx.type = 'text/css';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = css;
  });
  return router;
}
