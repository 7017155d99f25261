/**
 * Payment PII (spec: "payloads contain no payment PII"): card numbers, card security codes, bank
 * accounts, a person's name together with an identity document. The crm contract refuses a message that
 * carries any of them, wherever it sits, before anything else is checked, so nothing of it is stored:
 * not in the event store, not in the dead-letter table, not in an error message.
 */

/** Field names (compared without case, `_` or `-`) that only ever hold payment or identity data. */
const paymentFieldNames = new Set([
  'cardnumber',
  'pan',
  'primaryaccountnumber',
  'cvc',
  'cvc2',
  'cvv',
  'cvv2',
  'cid',
  'securitycode',
  'cardsecuritycode',
  'cardexpiry',
  'expirydate',
  'expirationdate',
  'cardholder',
  'cardholdername',
  'iban',
  'bankaccount',
  'bankaccountnumber',
  'accountnumber',
  'bic',
  'swift',
  'routingnumber',
  'sortcode',
]);

/** Identity documents: PII on their own. */
const documentFieldNames = new Set([
  'passport',
  'passportnumber',
  'document',
  'documentnumber',
  'iddocument',
  'snils',
  'inn',
  'taxid',
]);

/** A person's name: refused next to a document (name + document identify a payer). */
const personNameFieldNames = new Set(['fullname', 'firstname', 'lastname', 'middlename', 'surname', 'name']);

const normalise = (field: string) => field.toLowerCase().replace(/[^a-z0-9]/g, '');

// A run of 13 to 19 digits, optionally grouped by single spaces or dashes, not part of a longer run
// (a card number glued to letters, `card4111…`, `cus-4111…`, is still one).
const digitRun = /(?<!\d)(?<!\d[ -])\d(?:[ -]?\d){12,18}(?![ -]?\d)/g;
const ibanLike = /(?<![A-Z0-9])[A-Z]{2}\d{2}[A-Z0-9]{11,30}(?![A-Z0-9])/g;
// UUIDs (message ids) are not card numbers, though a digit-heavy one can look like a grouped number.
const uuidLike = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** The Luhn check every payment card number passes (ISO/IEC 7812). */
function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index += 1) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** The ISO 13616 check of an IBAN: the rearranged number modulo 97 is 1. */
function passesIbanCheck(iban: string): boolean {
  const rearranged = `${iban.slice(4)}${iban.slice(0, 4)}`;
  let remainder = 0;
  for (const character of rearranged) {
    const value = /\d/.test(character) ? character : String(character.charCodeAt(0) - 55);
    for (const digit of value) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder === 1;
}

/** Whether a text contains something shaped like a card number or an IBAN (checksums included). */
export function looksLikePaymentData(value: string): boolean {
  const text = value.replace(uuidLike, ' ');
  for (const match of text.matchAll(digitRun)) {
    if (passesLuhn(match[0].replace(/[ -]/g, ''))) return true;
  }
  for (const match of text.matchAll(ibanLike)) {
    if (passesIbanCheck(match[0])) return true;
  }
  return false;
}

/**
 * The paths (`data.cardNumber`, `data.items.0.note`) where a message carries payment PII; empty when
 * it carries none. Only paths are reported, never the values.
 */
export function findPaymentPii(value: unknown, path: string[] = []): string[] {
  if (typeof value === 'string') return looksLikePaymentData(value) ? [path.join('.') || '(value)'] : [];
  if (Array.isArray(value))
    return value.flatMap((item, index) => findPaymentPii(item, [...path, String(index)]));
  if (value === null || typeof value !== 'object') return [];
  const entries = Object.entries(value as Record<string, unknown>);
  const names = entries.map(([field]) => normalise(field));
  const hasDocument = names.some((name) => documentFieldNames.has(name));
  const found: string[] = [];
  for (const [field, fieldValue] of entries) {
    const name = normalise(field);
    const here = [...path, field];
    if (
      paymentFieldNames.has(name) ||
      documentFieldNames.has(name) ||
      (hasDocument && personNameFieldNames.has(name))
    ) {
      found.push(here.join('.'));
      continue;
    }
    found.push(...findPaymentPii(fieldValue, here));
  }
  return found;
}
