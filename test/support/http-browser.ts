/**
 * A minimal browser for HTTP-level flow tests: a cookie jar with path matching, manual redirects that
 * stop at the first address outside the service (the relying party's callback), and form submission
 * from the server-rendered pages. Real-browser tests use chromium through playwright instead.
 */
interface StoredCookie {
  name: string;
  value: string;
  path: string;
}

export interface Page {
  url: string;
  status: number;
  html: string;
  headers: Headers;
}

const decodeHtml = (value: string) =>
  value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

export class HttpBrowser {
  readonly #cookies: StoredCookie[] = [];

  /**
   * `origin` is where the service listens; `publicOrigin`, when the service's issuer is another address
   * (TLS ended by a proxy in front), is that address: the engine sends the browser there, and the
   * browser reaches the service through it, as through that proxy.
   */
  constructor(
    private readonly origin: string,
    private readonly publicOrigin?: string,
  ) {}

  cookieHeader(url: URL): string {
    return this.#cookies
      .filter(
        (cookie) =>
          url.pathname === cookie.path ||
          url.pathname.startsWith(cookie.path.endsWith('/') ? cookie.path : `${cookie.path}/`) ||
          cookie.path === '/',
      )
      .map((cookie) => `${cookie.name}=${cookie.value}`)
      .join('; ');
  }

  /** Another browser holding a copy of this one's cookies (a thief's, with cookies copied from here). */
  copy(): HttpBrowser {
    const copied = new HttpBrowser(this.origin, this.publicOrigin);
    copied.#cookies.push(...this.#cookies.map((cookie) => ({ ...cookie })));
    return copied;
  }

  cookieNames(): string[] {
    return this.#cookies.map((cookie) => cookie.name);
  }

  /** The cookies the browser holds, with the path each was set for. */
  cookiePaths(): { name: string; path: string }[] {
    return this.#cookies.map(({ name, path }) => ({ name, path }));
  }

  #store(url: URL, headers: Headers) {
    for (const line of headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const separator = pair!.indexOf('=');
      const name = pair!.slice(0, separator);
      const value = pair!.slice(separator + 1);
      const attribute = (key: string) =>
        attributes.find((item) => item.toLowerCase().startsWith(`${key}=`))?.split('=')[1];
      const path = attribute('path') ?? url.pathname.replace(/\/[^/]*$/, '') ?? '/';
      const expired =
        attribute('max-age') === '0' ||
        (attribute('expires') && new Date(attribute('expires')!) < new Date());
      const index = this.#cookies.findIndex((cookie) => cookie.name === name && cookie.path === path);
      if (index >= 0) this.#cookies.splice(index, 1);
      if (!expired) this.#cookies.push({ name, value, path });
    }
  }

  async request(url: string, init: RequestInit = {}): Promise<Page> {
    let target = new URL(url, this.origin);
    let response = await this.#fetch(target, init);
    // Follow redirects while they stay on the service.
    for (let hops = 0; response.status >= 300 && response.status < 400 && hops < 20; hops++) {
      const location = response.headers.get('location');
      if (!location) break;
      target = new URL(location, target);
      if (target.origin === this.publicOrigin)
        target = new URL(`${target.pathname}${target.search}`, this.origin);
      if (target.origin !== this.origin) {
        return { url: target.toString(), status: response.status, html: '', headers: response.headers };
      }
      response = await this.#fetch(target, { method: 'GET' });
    }
    return {
      url: target.toString(),
      status: response.status,
      html: await response.text(),
      headers: response.headers,
    };
  }

  async #fetch(url: URL, init: RequestInit): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = this.cookieHeader(url);
    if (cookie) headers.set('cookie', cookie);
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.#store(url, response.headers);
    return response;
  }

  navigate(url: string): Promise<Page> {
    return this.request(url);
  }

  /** Submits the page's (first) POST form with its hidden fields plus `fields`. */
  async submit(page: Page, fields: Record<string, string>): Promise<Page> {
    const { action, body } = formOf(page, fields);
    return this.request(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
  }

  /**
   * Submits the form like `submit` but stops at its answer: a browser that does not follow the redirect
   * (yet). Answers where it would have gone.
   */
  async submitWithoutFollowing(page: Page, fields: Record<string, string>): Promise<{ location: string }> {
    const { action, body } = formOf(page, fields);
    const target = new URL(action, page.url);
    const response = await this.#fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    await response.body?.cancel();
    const location = response.headers.get('location');
    if (!location) throw new Error(`no redirect from ${target.toString()}: ${response.status}`);
    return { location: new URL(location, target).toString() };
  }
}

function formOf(page: Page, fields: Record<string, string>): { action: string; body: string } {
  const form = /<form[^>]*method="post"[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(page.html);
  if (!form) throw new Error(`no form on ${page.url}:\n${page.html.slice(0, 500)}`);
  const body = new URLSearchParams();
  for (const input of form[2]!.matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
    const name = /name="([^"]+)"/.exec(input[0])?.[1];
    const value = /value="([^"]*)"/.exec(input[0])?.[1] ?? '';
    if (name) body.set(name, decodeHtml(value));
  }
  for (const [name, value] of Object.entries(fields)) body.set(name, value);
  return { action: decodeHtml(form[1]!), body: body.toString() };
}

export function pageText(page: Page, testId: string): string | undefined {
  const match = new RegExp(`data-testid="${testId}"[^>]*>([\\s\\S]*?)<`).exec(page.html);
  return match ? decodeHtml(match[1]!.trim()) : undefined;
}
