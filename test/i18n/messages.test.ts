import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { localesDirectory, Messages } from '../../src/i18n/messages.js';

const messages = Messages.load();

describe('messages', () => {
  it('knows every language folder, English first', () => {
    expect(messages.languages).toEqual(['en', 'ru']);
  });

  it('formats Russian plurals by the CLDR rules', () => {
    const ru = messages.in('ru');
    expect(ru('common.attempts.left', { count: 1 })).toBe('Осталась 1 попытка');
    expect(ru('common.attempts.left', { count: 4 })).toBe('Осталось 4 попытки');
    expect(ru('common.attempts.left', { count: 5 })).toBe('Осталось 5 попыток');
    expect(ru('common.attempts.left', { count: 21 })).toBe('Осталась 21 попытка');
    expect(messages.format('en', 'common.wait.minutes', { count: 5 })).toBe('5 minutes');
  });

  it('picks the first supported language of the candidates, else English', () => {
    expect(messages.pick(undefined, 'de', 'ru-RU')).toBe('ru');
    expect(messages.pick('fr')).toBe('en');
    expect(messages.in('xx')('common.language.name')).toBe('English');
  });

  it('has every English message in Russian too (no silent fallback)', () => {
    for (const file of fs.readdirSync(path.join(localesDirectory, 'en'))) {
      const read = (language: string) =>
        Object.keys(
          JSON.parse(fs.readFileSync(path.join(localesDirectory, language, file), 'utf8')) as object,
        );
      expect(read('ru'), file).toEqual(read('en'));
    }
  });

  it('has no Russian message left in English (the same text, or no Cyrillic letter at all)', () => {
    // Names that are the same in every language.
    const sameEverywhere = new Set(['management.json snapshot']);
    const untranslated: string[] = [];
    for (const file of fs.readdirSync(path.join(localesDirectory, 'en'))) {
      const read = (language: string) =>
        JSON.parse(fs.readFileSync(path.join(localesDirectory, language, file), 'utf8')) as Record<
          string,
          string
        >;
      const en = read('en');
      for (const [id, text] of Object.entries(read('ru'))) {
        if (sameEverywhere.has(`${file} ${id}`)) continue;
        if (text === en[id] || !/[а-яё]/i.test(text)) untranslated.push(`${file} ${id}: ${text}`);
      }
    }
    expect(untranslated).toEqual([]);
  });
});
