import { z } from 'zod';
import { looksLikePaymentData } from './payment-pii.js';

/**
 * The formats of the values the crm contract leaves open in the spec (docs/crm-contract.md says why):
 * ids, keys, instants, calendar days and months, money as integer minor units with an ISO 4217 code.
 */

/** A crm record id (natural key): opaque to management, never a card number or an account number. */
export const crmIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/, 'must be 1 to 100 characters: letters, digits, . _ : -')
  .refine((value) => !looksLikePaymentData(value), 'must not look like a card or bank account number')
  .describe('crm record id: 1-100 characters of letters, digits and . _ : - (opaque)');

/** A classification key (lead source, reason code, product): stable snake_case, like reference keys. */
export const crmKeySchema = z
  .string()
  .max(64)
  .regex(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/, 'must be a snake_case key (e.g. google_ads)')
  .describe('snake_case key, at most 64 characters');

/**
 * PostgreSQL has no year 0, and a UTC day past 9999 (`+010000-01-01`) is no `YYYY-MM-DD`: a message
 * with such an instant (`0000-…`, or `0001-01-01T00:00:00+14:00`, which is year 0 in UTC) could not be
 * applied, took its batch apart at every delivery and was kept aside only on its last one.
 */
const storableYear = (instant: string) => {
  const year = new Date(instant).getUTCFullYear();
  return year >= 1 && year <= 9999;
};
const storableYearMessage = 'must fall in the years 0001 to 9999 in UTC';

/** An instant: ISO 8601 date-time with a UTC offset (`Z` or `+03:00`). */
export const instantSchema = z.iso
  .datetime({ offset: true })
  .refine(storableYear, storableYearMessage)
  .describe('ISO 8601 date-time with offset, e.g. 2026-03-01T09:30:00Z');

/** A calendar day (UTC), `YYYY-MM-DD`. */
export const daySchema = z.iso
  .date()
  .refine(storableYear, storableYearMessage)
  .describe('calendar day YYYY-MM-DD (UTC)');

/** A calendar month, `YYYY-MM` (payroll periods). */
export const monthSchema = z
  .string()
  .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'must be a month YYYY-MM')
  .describe('calendar month YYYY-MM');

/** The version of a record: set by crm, grows by at least 1 at every change of that record. */
export const versionSchema = z
  .int()
  .min(1)
  .describe('version of the record, increasing with every change of it (newer = greater)');

const iso4217 = new Set(Intl.supportedValuesOf('currency'));

/** ISO 4217 alphabetic code (upper case). */
export const currencySchema = z
  .string()
  .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code of three capital letters')
  .refine((code) => iso4217.has(code), 'is not an ISO 4217 currency code')
  .describe('ISO 4217 alphabetic currency code, e.g. RUB');

/** An amount in minor units of its currency (kopecks, cents): an integer, never a float. */
export const amountMinorSchema = z
  .int()
  .min(0)
  .describe('amount in minor units of the currency (e.g. kopecks), a non-negative integer');

/** How many minor units make a major unit of a currency (RUB 2, JPY 0, KWD 3). */
export function minorUnitDigits(currency: string): number {
  return (
    new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2
  );
}

/** `YYYY-MM-DD` of an instant, in UTC: the day a fact counts on. */
export function utcDayOf(instant: string | Date): string {
  return new Date(instant).toISOString().slice(0, 10);
}

/** The first day of a month `YYYY-MM`. */
export function firstDayOf(month: string): string {
  return `${month}-01`;
}
