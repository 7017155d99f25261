import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IntlMessageFormat } from 'intl-messageformat';
import { z } from 'zod';

/**
 * Translations: `views/locales/<language>/<namespace>.json`, each a flat map of message ids to ICU
 * MessageFormat strings (plurals and selects by CLDR rules, e.g. Russian "4 попытки" / "5 попыток").
 * Adding a language is adding its folder; a message missing there falls back to English.
 */
export const localesDirectory = fileURLToPath(new URL('../../views/locales/', import.meta.url));

export const defaultLanguage = 'en';

const catalogFile = z.record(z.string(), z.string());

type Catalog = Map<string, string>;

export class Messages {
  readonly languages: readonly string[];
  readonly #catalogs: Map<string, Catalog>;
  readonly #formats = new Map<string, IntlMessageFormat>();

  private constructor(catalogs: Map<string, Catalog>) {
    this.#catalogs = catalogs;
    this.languages = [...catalogs.keys()].sort((a, b) =>
      a === defaultLanguage ? -1 : b === defaultLanguage ? 1 : a.localeCompare(b),
    );
  }

  /** Reads every language folder once (at start). Message ids are `<namespace>.<id>`. */
  static load(directory = localesDirectory): Messages {
    const catalogs = new Map<string, Catalog>();
    for (const language of fs.readdirSync(directory, { withFileTypes: true })) {
      if (!language.isDirectory()) continue;
      const catalog: Catalog = new Map();
      const folder = path.join(directory, language.name);
      for (const file of fs
        .readdirSync(folder)
        .filter((name) => name.endsWith('.json'))
        .sort()) {
        const namespace = file.slice(0, -'.json'.length);
        const entries = catalogFile.parse(JSON.parse(fs.readFileSync(path.join(folder, file), 'utf8')));
        for (const [id, message] of Object.entries(entries)) catalog.set(`${namespace}.${id}`, message);
      }
      catalogs.set(language.name, catalog);
    }
    if (!catalogs.has(defaultLanguage)) throw new Error(`no ${defaultLanguage} messages in ${directory}`);
    return new Messages(catalogs);
  }

  /** The first supported language of the candidates (primary subtag: `ru-RU` → `ru`), else English. */
  pick(...candidates: (string | undefined | null)[]): string {
    for (const candidate of candidates) {
      const primary = candidate?.trim().toLowerCase().split(/[-_]/)[0];
      if (primary && this.#catalogs.has(primary)) return primary;
    }
    return defaultLanguage;
  }

  /** The message in `language` (English when that language lacks it), formatted with `values`. */
  format(language: string, id: string, values?: Record<string, string | number | Date>): string {
    const lang = this.#catalogs.get(language)?.has(id) ? language : defaultLanguage;
    const key = `${lang}\u0000${id}`;
    let format = this.#formats.get(key);
    if (!format) {
      const source = this.#catalogs.get(lang)?.get(id);
      if (source === undefined) throw new Error(`unknown message ${id}`);
      format = new IntlMessageFormat(source, lang);
      this.#formats.set(key, format);
    }
    return String(format.format(values));
  }

  /** Whether a message with this id exists (in English, which every other language falls back to). */
  has(id: string): boolean {
    return this.#catalogs.get(defaultLanguage)?.has(id) === true;
  }

  /** A formatter bound to one language. */
  in(language: string): (id: string, values?: Record<string, string | number | Date>) => string {
    const lang = this.pick(language);
    return (id, values) => this.format(lang, id, values);
  }
}
