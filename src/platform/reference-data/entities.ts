import { z } from 'zod';
import type { ReferenceEntity } from '../events/platform-events.js';
import { localizedTextSchema } from './localized-text.js';
import { gradeRangeKeySchema, snakeCaseKeySchema } from './reference-key.js';

/**
 * The four reference-data entities with the spec's fields (Reference data entities): the shape of an
 * entry in answers, of a new entry (POST) and of a change (PATCH). Field names are the spec's snake_case.
 */

const displayOrder = z.number().int().min(-1_000_000).max(1_000_000);
const grade = z.number().int().min(0).max(20);
const age = z.number().int().min(0).max(150);

const subjectEntry = z
  .object({
    key: z.string(),
    title: localizedTextSchema,
    description: localizedTextSchema.nullable(),
    parent_key: z.string().nullable(),
    display_order: z.number().int(),
    is_active: z.boolean(),
  })
  .meta({ id: 'Subject' });

const levelEntry = z
  .object({
    key: z.string(),
    title: localizedTextSchema,
    display_order: z.number().int(),
    is_active: z.boolean(),
  })
  .meta({ id: 'Level' });

const formatEntry = z
  .object({
    key: z.string(),
    title: localizedTextSchema,
    description: localizedTextSchema.nullable(),
    is_active: z.boolean(),
  })
  .meta({ id: 'Format' });

const gradeRangeEntry = z
  .object({
    key: z.string(),
    min_grade: z.number().int().nullable(),
    max_grade: z.number().int().nullable(),
    min_age: z.number().int().nullable(),
    max_age: z.number().int().nullable(),
    title: localizedTextSchema,
    display_order: z.number().int(),
    is_active: z.boolean(),
  })
  .meta({ id: 'GradeRange' });

/** min ≤ max for grades and ages, wherever both are given. */
export function rangeProblems(range: {
  min_grade?: number | null;
  max_grade?: number | null;
  min_age?: number | null;
  max_age?: number | null;
}): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const { min_grade, max_grade, min_age, max_age } = range;
  if (min_grade != null && max_grade != null && min_grade > max_grade) {
    problems.push({ path: 'max_grade', message: 'must not be less than min_grade' });
  }
  if (min_age != null && max_age != null && min_age > max_age) {
    problems.push({ path: 'max_age', message: 'must not be less than min_age' });
  }
  return problems;
}

const withRangeCheck = <Shape extends z.ZodType<Parameters<typeof rangeProblems>[0]>>(schema: Shape) =>
  schema.superRefine((value, context) => {
    for (const problem of rangeProblems(value)) {
      context.addIssue({ code: 'custom', path: [problem.path], message: problem.message });
    }
  });

// PATCH may repeat the key (it is ignored when equal); a different key is refused: keys never change.
const keyInPatch = z.string().optional().describe('Keys never change; if given it must equal the path key');

const subjectNew = z.strictObject({
  key: snakeCaseKeySchema,
  title: localizedTextSchema,
  description: localizedTextSchema.nullable().optional(),
  parent_key: snakeCaseKeySchema.nullable().optional(),
  display_order: displayOrder.default(0),
  is_active: z.boolean().default(true),
});
const subjectPatch = z.strictObject({
  key: keyInPatch,
  title: localizedTextSchema.optional(),
  description: localizedTextSchema.nullable().optional(),
  parent_key: snakeCaseKeySchema.nullable().optional(),
  display_order: displayOrder.optional(),
  is_active: z.boolean().optional(),
});

const levelNew = z.strictObject({
  key: snakeCaseKeySchema,
  title: localizedTextSchema,
  display_order: displayOrder.default(0),
  is_active: z.boolean().default(true),
});
const levelPatch = z.strictObject({
  key: keyInPatch,
  title: localizedTextSchema.optional(),
  display_order: displayOrder.optional(),
  is_active: z.boolean().optional(),
});

const formatNew = z.strictObject({
  key: snakeCaseKeySchema,
  title: localizedTextSchema,
  description: localizedTextSchema.nullable().optional(),
  is_active: z.boolean().default(true),
});
const formatPatch = z.strictObject({
  key: keyInPatch,
  title: localizedTextSchema.optional(),
  description: localizedTextSchema.nullable().optional(),
  is_active: z.boolean().optional(),
});

const gradeRangeNew = withRangeCheck(
  z.strictObject({
    key: gradeRangeKeySchema,
    title: localizedTextSchema,
    min_grade: grade.nullable().optional(),
    max_grade: grade.nullable().optional(),
    min_age: age.nullable().optional(),
    max_age: age.nullable().optional(),
    display_order: displayOrder.default(0),
    is_active: z.boolean().default(true),
  }),
);
const gradeRangePatch = withRangeCheck(
  z.strictObject({
    key: keyInPatch,
    title: localizedTextSchema.optional(),
    min_grade: grade.nullable().optional(),
    max_grade: grade.nullable().optional(),
    min_age: age.nullable().optional(),
    max_age: age.nullable().optional(),
    display_order: displayOrder.optional(),
    is_active: z.boolean().optional(),
  }),
);

export interface EntityDefinition {
  entity: ReferenceEntity;
  /** The path segment under /reference. */
  segment: string;
  /** The entry as answered; also the list of the entity's fields. */
  entry: z.ZodObject;
  create: z.ZodType<Record<string, unknown>>;
  patch: z.ZodType<Record<string, unknown>>;
}

export const entityDefinitions: readonly EntityDefinition[] = [
  { entity: 'subject', segment: 'subjects', entry: subjectEntry, create: subjectNew, patch: subjectPatch },
  { entity: 'level', segment: 'levels', entry: levelEntry, create: levelNew, patch: levelPatch },
  { entity: 'format', segment: 'formats', entry: formatEntry, create: formatNew, patch: formatPatch },
  {
    entity: 'grade_range',
    segment: 'grade-ranges',
    entry: gradeRangeEntry,
    create: gradeRangeNew,
    patch: gradeRangePatch,
  },
];

export const entrySchemas = {
  subject: subjectEntry,
  level: levelEntry,
  format: formatEntry,
  grade_range: gradeRangeEntry,
} as const satisfies Record<ReferenceEntity, z.ZodObject>;

export type ReferenceEntry<Entity extends ReferenceEntity = ReferenceEntity> = z.infer<
  (typeof entrySchemas)[Entity]
>;

export function definitionOf(entity: ReferenceEntity): EntityDefinition {
  return entityDefinitions.find((definition) => definition.entity === entity)!;
}

/** The fields an entry of this entity has (the spec's list, in the spec's order). */
export function fieldsOf(entity: ReferenceEntity): string[] {
  return Object.keys(entrySchemas[entity].shape);
}
