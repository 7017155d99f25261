import Router from '@koa/router';
import type { Brand } from '../brand.js';

/**
 * The brand's own assets, made from the settings:
 * - GET /assets/brand.css: the configured primary colour as the pages' `--accent` (a stylesheet of its
 *   own, because the Content-Security-Policy allows no inline style). Loaded after pages.css.
 * - GET /assets/favicon.svg: the pages' icon (`<link rel="icon">`), the product name's initial in white
 *   on the primary colour. Without it the browser asks for /favicon.ico, which the service, possibly
 *   mounted under a path or in a host's app, doesn't answer: a 404 in the console of every page.
 */
export function brandStylesheetRoutes(brand: Brand): Router {
  const router = new Router();
  const css = `:root {\n  --accent: ${brand.primaryColor};\n}\n`;
  router.get('/assets/brand.css', (ctx) => {
    ctx.type = 'text/css';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = css;
  });
  const icon = brandIcon(brand);
  router.get('/assets/favicon.svg', (ctx) => {
    ctx.type = 'image/svg+xml';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = icon;
  });
  return router;
}

/** The icon as SVG: presentation attributes only (no style, which a CSP could refuse). */
export function brandIcon(brand: Brand): string {
  const initial = ([...brand.productName.trim()][0] ?? '').toLocaleUpperCase();
  const text = initial.replace(/[&<>]/g, (character) => `&#${character.charCodeAt(0)};`);
  return (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' +
    `<rect width="32" height="32" rx="6" fill="${brand.primaryColor}"/>` +
    '<text x="16" y="22.5" text-anchor="middle" font-family="system-ui, sans-serif" font-size="20" ' +
    `font-weight="700" fill="#fff">${text}</text></svg>\n`
  );
}
