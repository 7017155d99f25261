import { pageMessages } from '../i18n/page-language.js';
import type { ApiError } from './api-error.js';

/** "30 seconds", "5 минут": a wait in words, plural forms by CLDR rules (common.wait.*). */
export function waitText(lang: string, seconds: number): string {
  const messages = pageMessages();
  return seconds < 90
    ? messages.format(lang, 'common.wait.seconds', { count: seconds })
    : messages.format(lang, 'common.wait.minutes', { count: Math.ceil(seconds / 60) });
}

/**
 * What a page says about a refused request, in the page's language: our message for the error's code
 * (with what its details tell, e.g. attempts left), never an engine's raw text in another language. A
 * code we have no words for: its English message on English pages, a plain "something went wrong" on
 * the others.
 */
export function pageErrorText(
  lang: string,
  error: ApiError,
  values: Record<string, string> = {},
  /** false for texts not written for people (the engine's error descriptions). */
  ownMessage = true,
): string {
  const messages = pageMessages();
  const t = messages.in(lang);
  const details = (error.details ?? {}) as Record<string, unknown>;
  const retryAfter = Number(error.headers['Retry-After']);
  if ((error.code === 'too_many_attempts' || error.code === 'too_many_requests') && retryAfter > 0) {
    return t(`pages.error.${error.code}`, { wait: waitText(lang, retryAfter) });
  }
  if (error.code === 'invalid_code' && typeof details.attemptsLeft === 'number') {
    return t('pages.error.invalid_code_attempts', { count: details.attemptsLeft });
  }
  if (error.code === 'weak_password' && typeof details.reason === 'string') {
    const id = `pages.error.weak_password_${details.reason}`;
    if (messages.has(id)) {
      return t(id, { min: Number(details.minLength ?? 0), max: Number(details.maxLength ?? 0) });
    }
  }
  const id = `pages.error.${error.code}`;
  if (messages.has(id)) return t(id, values);
  return lang === 'en' && ownMessage ? error.message : t('pages.error.generic');
}

/** The lockout countdown's sentences for every second (under 90) and minute of a wait (lockout-countdown.js). */
export function lockoutTexts(lang: string, retryAfterSeconds: number) {
  const t = pageMessages().in(lang);
  const sentence = (seconds: number) => t('pages.error.too_many_attempts', { wait: waitText(lang, seconds) });
  const seconds = Array.from({ length: Math.min(90, retryAfterSeconds + 1) }, (_, index) => sentence(index));
  const minutes: Record<number, string> = {};
  for (let minute = 2; minute <= Math.ceil(retryAfterSeconds / 60); minute += 1) {
    minutes[minute] = sentence(minute * 60);
  }
  return { seconds, minutes, ready: t('pages.error.too_many_attempts_ready') };
}
