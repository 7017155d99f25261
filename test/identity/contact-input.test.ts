import { describe, expect, it } from 'vitest';
import { parseIdentifier } from '../../src/identity/users/contact.js';

describe('email or phone as people type them', () => {
  it('reads Russian national numbers (8 or 7 prefix, spaces, dashes, brackets) as E.164', () => {
    for (const typed of [
      '8 916 123-45-67',
      '8 (916) 123-45-67',
      '89161234567',
      '7 916 123 45 67',
      '916 123 45 67',
    ]) {
      expect(parseIdentifier(typed), typed).toEqual({ kind: 'phone', value: '+79161234567' });
    }
  });

  it('gives one number one spelling: a trunk prefix written after the country code is dropped', () => {
    // Two spellings of one phone would be two accounts (and two lockout ladders) for it.
    expect(parseIdentifier('+7 8 916 123-45-67')).toEqual({ kind: 'phone', value: '+79161234567' });
    expect(parseIdentifier('+49 0151 1234567')).toEqual({ kind: 'phone', value: '+491511234567' });
    // A number no numbering plan knows stays as written (test ranges, new plans).
    expect(parseIdentifier('+1 555 000 0000')).toEqual({ kind: 'phone', value: '+15550000000' });
  });

  it('takes international numbers as written, and refuses what is no number', () => {
    expect(parseIdentifier('+1 (415) 555-0123')).toEqual({ kind: 'phone', value: '+14155550123' });
    expect(parseIdentifier('+7 916 123-45-67')).toEqual({ kind: 'phone', value: '+79161234567' });
    expect(parseIdentifier('8 123')).toBeUndefined();
    expect(parseIdentifier('hello')).toBeUndefined();
    expect(parseIdentifier(' Name@Example.COM ')).toEqual({ kind: 'email', value: 'name@example.com' });
    // Lower-cased only once judged: the Kelvin sign would otherwise become an ASCII k.
    expect(parseIdentifier('\u212Aate@example.com')).toBeUndefined();
  });

  it('refuses a number with an extension: its E.164 form is the switchboard, everyone behind it', () => {
    for (const typed of ['+1 650 253 0000 ext. 89', '+16502530000;ext=89', '+1 (650) 253-0000 x89']) {
      expect(parseIdentifier(typed), typed).toBeUndefined();
    }
    expect(parseIdentifier('+1 650 253 0000')).toEqual({ kind: 'phone', value: '+16502530000' });
  });
});
