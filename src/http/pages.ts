import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { Context } from 'koa';

export const viewsDirectory = fileURLToPath(new URL('../../views/', import.meta.url));

// Eta escapes every `<%= %>` output; templates never print raw user input.
const eta = new Eta({ views: viewsDirectory, cache: true, autoEscape: true, autoTrim: false });

export function renderView(template: string, data: Record<string, unknown>): string {
  return eta.render(template, data);
}

/** Content-Security-Policy of our pages: no inline script, nothing from other origins. */
const pageSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ');

export function renderPage(
  ctx: Context,
  template: string,
  data: Record<string, unknown>,
  status = 200,
): void {
  ctx.status = status;
  ctx.type = 'html';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', pageSecurityPolicy);
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.body = renderView(template, data);
}
