import { z } from 'zod';

// language[-Script][-REGION]: en, ru, en-GB, zh-Hant-TW, es-419. Private-use and extensions are refused.
const localeShape = /^[a-z]{2,3}(-[A-Z][a-z]{3})?(-(?:[A-Z]{2}|\d{3}))?$/;

/** A BCP 47 locale code in canonical form ("en-GB", not "en_gb" or "EN-gb"). */
export const localeCodeSchema = z.string().refine(
  (tag) => {
    if (!localeShape.test(tag)) return false;
    try {
      return Intl.getCanonicalLocales(tag)[0] === tag;
    } catch {
      return false;
    }
  },
  { message: 'must be a BCP 47 locale code in canonical form, e.g. en, ru, en-GB, zh-Hant' },
);

/**
 * An i18n text (spec: title and description are i18n objects): locale code → text, at least one locale.
 */
export const localizedTextSchema = z
  .record(localeCodeSchema, z.string().trim().min(1, 'must not be empty').max(2000), {
    error: (issue) =>
      issue.code === 'invalid_key'
        ? 'locale codes must be BCP 47 in canonical form, e.g. en, ru, en-GB, zh-Hant'
        : undefined,
  })
  .refine((text) => Object.keys(text).length >= 1, { message: 'needs at least one locale' })
  .refine((text) => Object.keys(text).length <= 50, { message: 'has too many locales (at most 50)' })
  .meta({ id: 'LocalizedText', description: 'Locale code (BCP 47) → text; at least one locale' });

export type LocalizedText = z.infer<typeof localizedTextSchema>;
