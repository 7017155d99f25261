import type { Context } from 'koa';
import { publicPath } from '../http/base-path.js';
import { defaultLanguage, Messages } from './messages.js';

let loaded: Messages | undefined;

/** The messages of the pages, read once from views/locales. */
export function pageMessages(): Messages {
  return (loaded ??= Messages.load());
}

/** `/ru/auth` → `ru`: the language segment of a page's path (two letters, optional region). */
const languageSegment = /^\/([a-z]{2})(?:-[A-Za-z]{2,4})?(?=\/|$)/;

type PageRequest = Pick<Context, 'path' | 'querystring' | 'query' | 'state' | 'acceptsLanguages'> & {
  mountPath?: string;
};

/** What else may say which language the person reads, besides the URL and the browser. */
export interface LanguageHints {
  /** OIDC `ui_locales` of the authorization request: space-separated BCP 47 tags, preferred first. */
  uiLocales?: string | undefined;
  /** The language saved on the signed-in (or identified) user's account. */
  userLanguage?: string | null | undefined;
}

function supported(messages: Messages, tag: string | undefined | null): string | undefined {
  const primary = tag?.trim().toLowerCase().split(/[-_]/)[0];
  return primary && messages.languages.includes(primary) ? primary : undefined;
}

/**
 * The language of a page: the URL segment (`/ru/...`; one we don't have falls back to English, never
 * English text under another tag), else `?lang=` (pages without a segment), else `ui_locales`, else the
 * user's saved language, else Accept-Language, else English.
 */
export function pageLanguage(ctx: PageRequest, hints: LanguageHints = {}): string {
  const messages = pageMessages();
  const segment = languageSegment.exec(ctx.path)?.[1];
  if (segment !== undefined) return supported(messages, segment) ?? defaultLanguage;
  const query = typeof ctx.query.lang === 'string' ? ctx.query.lang : undefined;
  const uiLocales =
    hints.uiLocales ?? (typeof ctx.query.ui_locales === 'string' ? ctx.query.ui_locales : undefined);
  const candidates = [query, ...(uiLocales?.split(' ') ?? []), hints.userLanguage];
  for (const candidate of candidates) {
    const language = supported(messages, candidate);
    if (language) return language;
  }
  const accepted = ctx.acceptsLanguages(...messages.languages);
  return typeof accepted === 'string' ? accepted : defaultLanguage;
}

export interface LanguageLink {
  code: string;
  name: string;
  href: string;
  current: boolean;
}

/**
 * The language switch: the same page in every language. A path with a language segment gets it
 * replaced (`/en/auth?interaction=…` → `/ru/auth?interaction=…`); any other page is linked as itself
 * with `?lang=` (a reference relative to the page: the request's path is never written out).
 */
export function languageLinks(ctx: PageRequest, current: string, target?: string): LanguageLink[] {
  const messages = pageMessages();
  // A page answering a form post names the page to switch on (a GET of the post's path may not exist).
  const [path = '/', querystring = ''] = (target ?? `${ctx.path}?${ctx.querystring}`).split('?', 2);
  const hasSegment = languageSegment.test(path);
  return messages.languages.map((code) => {
    let href: string;
    if (hasSegment) {
      const translated = path.replace(languageSegment, `/${code}`);
      href = publicPath(ctx, querystring ? `${translated}?${querystring}` : translated);
    } else {
      // Only `lang`: such a page's query is not ours to repeat (the engine's error page of a request
      // carrying an attacker's redirect_uri must not link to it), nor is the path a request came with:
      // `//evil.example/x` reaches our 404 page as a path, and written into a link it is another site.
      // So the page itself, `?lang=`, unless the page names where to switch.
      const query = `?${new URLSearchParams({ lang: code })}`;
      href = target === undefined ? query : publicPath(ctx, `${path}${query}`);
    }
    return { code, name: messages.format(code, 'common.language.name'), href, current: code === current };
  });
}
