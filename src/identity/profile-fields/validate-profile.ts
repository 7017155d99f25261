import { ApiError } from '../../http/api-error.js';
import type { FieldDefinition } from './field-definitions.js';
import { matchesWholePattern } from './pattern-match.js';

/** What a registration form may send for one field: text inputs send strings, checkboxes "on". */
export type ProfileInput = Record<string, string | number | boolean>;

export interface ProfileProblem {
  field: string;
  message: string;
}

const defaultMaxLength = 500;
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const phonePattern = /^\+?[0-9][0-9 ()-]{3,24}$/;

/**
 * Checks a registration's answers against the active field definitions, on the server, whatever the
 * page did: required fields present, each value of its type and within its rules, no field that isn't
 * defined. Returns the values to store (as text, trimmed; empty optional fields left out) or throws
 * 400 `invalid_profile` with one problem per field in `details.fields`.
 */
export function validateProfile(definitions: FieldDefinition[], input: ProfileInput): Record<string, string> {
  const problems: ProfileProblem[] = [];
  const known = new Set(definitions.map((field) => field.key));
  for (const key of Object.keys(input)) {
    if (!known.has(key)) problems.push({ field: key, message: 'There is no such field.' });
  }
  const values: Record<string, string> = {};
  for (const field of definitions) {
    // Own answers only: a field may be named `constructor`, which every object inherits.
    const outcome = judgeField(field, Object.hasOwn(input, field.key) ? input[field.key] : undefined);
    if ('problem' in outcome) problems.push({ field: field.key, message: outcome.problem });
    else if (outcome.value !== undefined) values[field.key] = outcome.value;
  }
  if (problems.length > 0) {
    throw new ApiError(400, 'invalid_profile', 'Some profile fields are not filled in right.', {
      fields: problems,
    });
  }
  return values;
}

function judgeField(
  field: FieldDefinition,
  raw: string | number | boolean | undefined,
): { value: string | undefined } | { problem: string } {
  const rules = field.validation;
  if (field.type === 'checkbox') {
    const checked = raw === true || raw === 'on' || raw === 'true';
    if (raw !== undefined && !checked && raw !== false && raw !== 'false' && raw !== '') {
      return { problem: 'Tick the box or leave it.' };
    }
    if (field.required && !checked) return { problem: `${field.title} must be ticked.` };
    return { value: checked ? 'true' : raw === undefined ? undefined : 'false' };
  }
  if (typeof raw === 'boolean') return { problem: `${field.title} must be a value, not a tick.` };
  const text = raw === undefined ? '' : String(raw).trim();
  if (text === '') return field.required ? { problem: `${field.title} is required.` } : { value: undefined };

  const maxLength = rules.maxLength ?? defaultMaxLength;
  if (text.length > maxLength) return { problem: `${field.title} is longer than ${maxLength} characters.` };
  if (rules.minLength !== undefined && text.length < rules.minLength) {
    return { problem: `${field.title} needs at least ${rules.minLength} characters.` };
  }
  switch (field.type) {
    case 'number': {
      const number = Number(text);
      if (!/^-?\d+(\.\d+)?$/.test(text) || !Number.isFinite(number)) {
        return { problem: `${field.title} must be a number.` };
      }
      if (typeof rules.min === 'number' && number < rules.min) {
        return { problem: `${field.title} must be at least ${rules.min}.` };
      }
      if (typeof rules.max === 'number' && number > rules.max) {
        return { problem: `${field.title} must be at most ${rules.max}.` };
      }
      return { value: text };
    }
    case 'date': {
      const date = /^\d{4}-\d{2}-\d{2}$/.test(text) ? new Date(`${text}T00:00:00Z`) : undefined;
      if (!date || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text) {
        return { problem: `${field.title} must be a date (YYYY-MM-DD).` };
      }
      if (typeof rules.min === 'string' && text < rules.min) {
        return { problem: `${field.title} must be on or after ${rules.min}.` };
      }
      if (typeof rules.max === 'string' && text > rules.max) {
        return { problem: `${field.title} must be on or before ${rules.max}.` };
      }
      return { value: text };
    }
    case 'select':
      return rules.options?.some((option) => option.value === text)
        ? { value: text }
        : { problem: `Choose one of the options for ${field.title}.` };
    case 'email':
      if (!emailPattern.test(text)) return { problem: `${field.title} must be an email address.` };
      break;
    case 'tel':
      if (!phonePattern.test(text)) return { problem: `${field.title} must be a phone number.` };
      break;
    default:
      break;
  }
  // Matched with its time bounded: a pattern can backtrack for ever on a value that almost matches.
  if (rules.pattern !== undefined && matchesWholePattern(rules.pattern, text) !== true) {
    return { problem: `${field.title} is not in the expected form.` };
  }
  return { value: text };
}
