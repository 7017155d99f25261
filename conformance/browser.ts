import { politeFetch } from './polite-fetch.js';

/**
 * Just enough of a browser for the sign-in and logout pages: cookies per path, redirects followed while
 * they stay on the provider, forms submitted with their hidden fields. It stops at the first redirect
 * that leaves the provider (the client's redirect_uri), which is where a relying party takes over.
 */
export interface Page {
  url: string;
  status: number;
  html: string;
}

const decodeHtml = (text: string) =>
  text
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#x2F;/g, '/')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');

export class PageBrowser {
  readonly #cookies = new Map<string, { value: string; path: string }>();

  constructor(readonly origin: string) {}

  async navigate(url: string, init: RequestInit = {}): Promise<Page> {
    let target = new URL(url, this.origin);
    let response = await this.#fetch(target, init);
    for (let hops = 0; response.status >= 300 && response.status < 400 && hops < 20; hops++) {
      const location = response.headers.get('location');
      if (!location) break;
      await response.body?.cancel();
      target = new URL(location, target);
      if (target.origin !== this.origin) return { url: target.toString(), status: response.status, html: '' };
      response = await this.#fetch(target, { method: 'GET' });
    }
    return { url: target.toString(), status: response.status, html: await response.text() };
  }

  /** Submits the page's first POST form: its hidden fields plus `fields`. */
  async submit(page: Page, fields: Record<string, string>): Promise<Page> {
    const form = /<form[^>]*method="post"[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(page.html);
    if (!form) throw new Error(`no form on ${page.url}`);
    const body = new URLSearchParams();
    for (const input of form[2]!.matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
      const name = /name="([^"]+)"/.exec(input[0])?.[1];
      if (name) body.set(name, decodeHtml(/value="([^"]*)"/.exec(input[0])?.[1] ?? ''));
    }
    for (const [name, value] of Object.entries(fields)) body.set(name, value);
    return this.navigate(new URL(decodeHtml(form[1]!), page.url).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
    });
  }

  async #fetch(url: URL, init: RequestInit): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = [...this.#cookies]
      .filter(([, stored]) => url.pathname.startsWith(stored.path))
      .map(([name, stored]) => `${name}=${stored.value}`)
      .join('; ');
    if (cookie) headers.set('cookie', cookie);
    const response = await politeFetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const separator = pair!.indexOf('=');
      const name = pair!.slice(0, separator);
      const path = attributes.find((item) => item.toLowerCase().startsWith('path='))?.slice(5) ?? '/';
      const expired =
        attributes.some((item) => item.toLowerCase() === 'max-age=0') ||
        attributes.some(
          (item) => item.toLowerCase().startsWith('expires=') && new Date(item.slice(8)) < new Date(),
        );
      if (expired) this.#cookies.delete(name);
      else this.#cookies.set(name, { value: pair!.slice(separator + 1), path });
    }
    return response;
  }
}
