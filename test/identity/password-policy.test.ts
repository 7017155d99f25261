import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { assertPasswordAcceptable, passwordSchema } from '../../src/identity/passwords/password-policy.js';

function reasonFor(password: string, context?: string[]): string | undefined {
  try {
    assertPasswordAcceptable(password, context);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: 'weak_password' });
    return (error as ApiError & { details: { reason: string } }).details.reason;
  }
}

describe('password policy (OWASP ASVS)', () => {
  it('needs at least 8 characters, counted as people count them', () => {
    expect(reasonFor('Xq7#zL2')).toBe('too_short');
    expect(reasonFor('Xq7#zL2!')).toBeUndefined();
    // 8 emoji are 8 characters (16 UTF-16 units); 7 are too few.
    expect(reasonFor('🐙🦑🐡🦐🦀🐚🪸')).toBe('too_short');
    expect(reasonFor('🐙🦑🐡🦐🦀🐚🪸🐳')).toBeUndefined();
  });

  it('judges the password as it is hashed: NFKC-normalized, its length in code points', () => {
    // é typed as e + a combining accent is one character: 7 of them are too few.
    const decomposed = 'e\u0301'.repeat(7);
    expect([...decomposed]).toHaveLength(14);
    expect(reasonFor(decomposed)).toBe('too_short');
    // The ligature ﬃ is the three letters ffi: three ligatures make 9 characters.
    expect(reasonFor('\uFB03\uFB03\uFB03')).toBeUndefined();
    // Full-width letters are the common password they spell.
    expect(reasonFor('\uFF50\uFF41\uFF53\uFF53\uFF57\uFF4F\uFF52\uFF44')).toBe('common');
    expect(passwordSchema.safeParse(decomposed).success).toBe(false);
    expect(passwordSchema.safeParse('\uFB03\uFB03\uFB03').success).toBe(true);
  });

  it('accepts up to 128 characters and refuses more (never truncates)', () => {
    expect(reasonFor('a long passphrase '.repeat(7).slice(0, 128))).toBeUndefined();
    expect(reasonFor('a long passphrase '.repeat(8).slice(0, 129))).toBe('too_long');
  });

  it('has no composition rules: lower-case words and spaces are fine', () => {
    expect(reasonFor('correct horse battery staple')).toBeUndefined();
    expect(reasonFor('zzzzqqqqwwwwpppp')).toBeUndefined();
  });

  it('refuses passwords of the bundled common-password list, in any letter case', () => {
    for (const common of [
      'password',
      'password1',
      '12345678',
      'qwertyuiop',
      'iloveyou',
      'PassWord1',
      'sunshine',
    ]) {
      expect(reasonFor(common), common).toBe('common');
    }
  });

  it("refuses the user's own email, its name part, or phone as password", () => {
    const context = ['ada.lovelace@example.com', '+14155550123'];
    expect(reasonFor('ada.lovelace@example.com', context)).toBe('contains_identifier');
    expect(reasonFor('Ada.Lovelace', context)).toBe('contains_identifier');
    expect(reasonFor('+14155550123', context)).toBe('contains_identifier');
    expect(reasonFor('ada lovelace analytical engine', context)).toBeUndefined();
  });

  it('says why in a sentence a user can act on', () => {
    try {
      assertPasswordAcceptable('short');
    } catch (error) {
      expect((error as ApiError).toBody()).toEqual({
        error: 'weak_password',
        message: 'Use at least 8 characters.',
        details: { reason: 'too_short', minLength: 8, maxLength: 128 },
      });
    }
    expect.assertions(1);
  });
});
