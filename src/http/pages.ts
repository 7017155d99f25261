import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { Context } from 'koa';
import { languageLinks, pageLanguage, pageMessages } from '../i18n/page-language.js';
import { publicPath } from './base-path.js';

export const viewsDirectory = fileURLToPath(new URL('../../views/', import.meta.url));

// Eta escapes every `<%= %>` output; templates never print raw user input.
const eta = new Eta({ views: viewsDirectory, cache: true, autoEscape: true, autoTrim: false });

/**
 * A template with its data; `it.url(path)` is the path itself unless the caller says otherwise, and
 * `it.t(id, values)` the page messages in `it.lang` (English unless given), `it.tOr(id, fallback)` one
 * that may be missing.
 */
export function renderView(template: string, data: Record<string, unknown>): string {
  const lang = typeof data.lang === 'string' ? data.lang : 'en';
  const messages = pageMessages();
  const t = messages.in(lang);
  return eta.render(template, {
    url: (path: string) => path,
    t,
    // A text a step or plugin describes itself: ours when we have a message for it, else theirs.
    tOr: (id: string, fallback: string, values?: Record<string, string | number>) =>
      messages.has(id) ? t(id, values) : fallback,
    languageLinks: [],
    ...data,
  });
}

/**
 * A page in the person's language (`data.lang`, else resolved from the request: src/i18n/page-language.ts),
 * with its language switch (`data.switchTarget`: the page to switch on when it answers a form post).
 */
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
  const lang = typeof data.lang === 'string' ? data.lang : pageLanguage(ctx);
  ctx.set('Content-Language', lang);
  const target = typeof data.switchTarget === 'string' ? data.switchTarget : undefined;
  // `it.url('/assets/pages.css')`: every link of a page goes through it (the service may be mounted).
  ctx.body = renderView(template, {
    url: (path: string) => publicPath(ctx, path),
    languageLinks: languageLinks(ctx, lang, target),
    // The product's name and logo (set for every request by the service: src/service.ts).
    brand: (ctx.state as { brand?: unknown }).brand,
    ...data,
    lang,
  });
}
