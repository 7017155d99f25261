import { describe, expect, it } from 'vitest';
import { fieldDefinitionSchema } from '../../src/identity/profile-fields/field-definitions.js';
import { validateProfile } from '../../src/identity/profile-fields/validate-profile.js';

// An administrator's pattern with overlapping alternatives under one repetition nests no repetition,
// so it is saved; matched without a bound, a value that almost matches backtracked for seconds (38 a's)
// to forever (a field's 2,000 characters), holding the process for every request of everyone.
describe('a profile field pattern that backtracks', () => {
  const field = fieldDefinitionSchema.parse({
    key: 'code',
    title: 'Code',
    type: 'text',
    validation: { pattern: '(a|aa)*', maxLength: 2000 },
  });

  it('refuses a value that takes too long to match, within the budget', () => {
    const started = performance.now();
    let problem: unknown;
    try {
      validateProfile([field], { code: `${'a'.repeat(38)}!` });
    } catch (error) {
      problem = error;
    }
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(problem).toMatchObject({
      status: 400,
      code: 'invalid_profile',
      details: { fields: [{ field: 'code', message: 'Code is not in the expected form.' }] },
    });
  });

  it('bounds a field’s longest value too', () => {
    const started = performance.now();
    expect(() => validateProfile([field], { code: `${'a'.repeat(1999)}!` })).toThrow();
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('still matches values as before', () => {
    expect(validateProfile([field], { code: 'aaaa' })).toEqual({ code: 'aaaa' });
    expect(() => validateProfile([field], { code: 'ab' })).toThrow();
  });
});
