import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { Context } from 'koa';
import { publicPath } from './base-path.js';

export const viewsDirectory = fileURLToPath(new URL('../../views/', import.meta.url));

// Eta escapes every `<%= %>` output; templates never print raw user input.
const eta = new Eta({ views: viewsDirectory, cache: true, autoEscape: true, autoTrim: false });

/** A template with its data; `it.url(path)` is the path itself unless the caller says otherwise. */
export function renderView(template: string, data: Record<string, unknown>): string {
  return eta.render(template, { url: (path: string) => path, ...data });
}

export function renderPage(
  ctx: Context,
  template: string,
  data: Record<string, unknown>,
  status = 200,
): void {
  ctx.status = status;
  ctx.type = 'html';
  // CSP, nosniff and the other security headers: security-headers.ts, for every answer.
  ctx.set('Cache-Control', 'no-store');
  // `it.url('/assets/pages.css')`: every link of a page goes through it (the service may be mounted).
  ctx.body = renderView(template, { url: (path: string) => publicPath(ctx, path), ...data });
}
