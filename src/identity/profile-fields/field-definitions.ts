import isSafeRegex from 'safe-regex2';
import { z } from 'zod';
import type { Queryable } from '../../db/database.js';
import { integerColumnSchema } from '../../db/integer-column.js';

export const profileFieldTypes = ['text', 'number', 'date', 'email', 'tel', 'select', 'checkbox'] as const;
export type ProfileFieldType = (typeof profileFieldTypes)[number];

const isoDate = z.iso.date();

/** The rules an administrator may put on a field; each applies to the types it makes sense for. */
export const fieldValidationSchema = z.strictObject({
  /** text, email, tel: the whole value must match (a JavaScript regular expression, no flags). */
  pattern: z
    .string()
    .max(500)
    .refine(
      (pattern) => {
        try {
          new RegExp(pattern);
          return true;
        } catch {
          return false;
        }
      },
      { message: 'must be a valid regular expression' },
    )
    // Run on what people type (up to 2,000 characters): nested repetition such as `(a+)+$` takes
    // exponential time on a value that almost matches, and would hold the process for everyone.
    .refine((pattern) => isSafeRegex(pattern), {
      message: 'must not nest repetition (such as (a+)+): it can take exponential time to match',
    })
    .optional(),
  minLength: z.number().int().min(0).max(2000).optional(),
  maxLength: z.number().int().min(1).max(2000).optional(),
  /** number: numbers; date: ISO dates (YYYY-MM-DD). */
  min: z.union([z.number(), isoDate]).optional(),
  max: z.union([z.number(), isoDate]).optional(),
  /** select: the values one may choose, with their labels. */
  options: z
    .array(z.strictObject({ value: z.string().min(1).max(100), label: z.string().min(1).max(255) }))
    .min(1)
    .max(200)
    .optional(),
});
export type FieldValidation = z.infer<typeof fieldValidationSchema>;

export const fieldKeySchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'lower-case letters, digits, - and _ (max 64)');

/** A definition's fields without the rules across them (the admin API's change body is built from it). */
export const fieldDefinitionFields = z.strictObject({
  key: fieldKeySchema,
  title: z.string().trim().min(1).max(255),
  type: z.enum(profileFieldTypes),
  required: z.boolean().default(false),
  validation: fieldValidationSchema.default({}),
  order: integerColumnSchema.default(0),
  isActive: z.boolean().default(true),
});

export const fieldDefinitionSchema = fieldDefinitionFields.superRefine((field, issues) => {
  if (field.type === 'select' && !field.validation.options) {
    issues.addIssue({
      code: 'custom',
      path: ['validation', 'options'],
      message: 'a select field needs options',
    });
  }
});
export type FieldDefinitionInput = z.input<typeof fieldDefinitionSchema>;
export type FieldDefinition = z.output<typeof fieldDefinitionSchema>;

interface FieldDefinitionRow {
  key: string;
  title: string;
  type: ProfileFieldType;
  required: boolean;
  validation: FieldValidation | string;
  sort_order: number;
  is_active: boolean;
}

function fromRow(row: FieldDefinitionRow): FieldDefinition {
  return {
    key: row.key,
    title: row.title,
    type: row.type,
    required: row.required,
    validation: typeof row.validation === 'string' ? JSON.parse(row.validation) : row.validation,
    order: row.sort_order,
    isActive: row.is_active,
  };
}

/** The fields registration asks for now, in their order. */
export async function listActiveFieldDefinitions(db: Queryable): Promise<FieldDefinition[]> {
  const rows = (await db('user_field_definitions')
    .where({ is_active: true })
    .orderBy([{ column: 'sort_order' }, { column: 'key' }])) as FieldDefinitionRow[];
  return rows.map(fromRow);
}

/** Every definition, active or not, in their order (the administrators' list). */
export async function listFieldDefinitions(db: Queryable): Promise<FieldDefinition[]> {
  const rows = (await db('user_field_definitions').orderBy([
    { column: 'sort_order' },
    { column: 'key' },
  ])) as FieldDefinitionRow[];
  return rows.map(fromRow);
}

export async function findFieldDefinition(db: Queryable, key: string): Promise<FieldDefinition | undefined> {
  const row = (await db('user_field_definitions').where({ key }).first()) as FieldDefinitionRow | undefined;
  return row ? fromRow(row) : undefined;
}

/** How many users answered the field (their answers go with a deleted definition). */
export async function countFieldValues(db: Queryable, key: string): Promise<number> {
  const row = (await db('user_field_values').where({ field_key: key }).count('* as count').first()) as
    { count: string | number } | undefined;
  return Number(row?.count ?? 0);
}

/** Deletes a definition (and, by the foreign key, its stored answers); false when there was none. */
export async function deleteFieldDefinition(db: Queryable, key: string): Promise<boolean> {
  return (await db('user_field_definitions').where({ key }).delete()) > 0;
}

/** Creates or replaces the definition of `key` (validated: a bad definition never reaches the table). */
export async function saveFieldDefinition(
  db: Queryable,
  input: FieldDefinitionInput,
  now: Date,
): Promise<FieldDefinition> {
  const field = fieldDefinitionSchema.parse(input);
  const row = {
    key: field.key,
    title: field.title,
    type: field.type,
    required: field.required,
    validation: JSON.stringify(field.validation),
    sort_order: field.order,
    is_active: field.isActive,
    updated_at: now,
  };
  await db('user_field_definitions')
    .insert({ ...row, created_at: now })
    .onConflict('key')
    .merge(row);
  return field;
}
