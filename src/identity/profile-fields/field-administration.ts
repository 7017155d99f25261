import type { Knex } from 'knex';
import { z } from 'zod';
import type { Database } from '../../db/database.js';
import { integerColumnSchema } from '../../db/integer-column.js';
import { ApiError } from '../../http/api-error.js';
import {
  countFieldValues,
  deleteFieldDefinition,
  fieldDefinitionFields,
  fieldDefinitionSchema,
  findFieldDefinition,
  saveFieldDefinition,
  type FieldDefinition,
} from './field-definitions.js';

/** A change to a definition: any of its fields but the key (the key names the stored answers). */
export const fieldDefinitionChangeSchema = fieldDefinitionFields
  .omit({ key: true })
  .extend({
    required: z.boolean(),
    validation: fieldDefinitionFields.shape.validation.unwrap(),
    order: integerColumnSchema,
    isActive: z.boolean(),
  })
  .partial();
export type FieldDefinitionChange = z.infer<typeof fieldDefinitionChangeSchema>;

/** Writes the audit event of a change, in its transaction (the API's and the CLI's differ in who). */
export type AuditChange = (
  trx: Knex.Transaction,
  type: string,
  details: Record<string, unknown>,
) => Promise<void>;

export const profileFieldAuditEventTypes = {
  created: 'admin.profile_field.created',
  updated: 'admin.profile_field.updated',
  deleted: 'admin.profile_field.deleted',
} as const;

const notFound = (key: string) =>
  new ApiError(404, 'field_not_found', `There is no profile field ${key}.`, { key });

function invalid(error: z.ZodError): ApiError {
  const problems = error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  const said = problems.map((problem) => `${problem.path || 'field'}: ${problem.message}`).join('; ');
  return new ApiError(400, 'invalid_field', `The profile field is not valid (${said}).`, problems);
}

/**
 * The administrators' changes to user_field_definitions (admin API and CLI alike): each checked whole
 * against the definition rules before it is written, written with its audit event in one transaction.
 */
export class FieldDefinitionAdministration {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date,
  ) {}

  async create(input: unknown, audit: AuditChange): Promise<FieldDefinition> {
    const parsed = fieldDefinitionSchema.safeParse(input);
    if (!parsed.success) throw invalid(parsed.error);
    const field = parsed.data;
    return this.db.transaction(async (trx) => {
      // Two parallel creations of one key both pass this check and end as one definition (an upsert).
      if (await findFieldDefinition(trx, field.key)) {
        throw new ApiError(409, 'field_exists', `A profile field ${field.key} exists already.`, {
          key: field.key,
        });
      }
      const saved = await saveFieldDefinition(trx, field, this.now());
      await audit(trx, profileFieldAuditEventTypes.created, { key: saved.key, after: saved });
      return saved;
    });
  }

  async update(key: string, change: FieldDefinitionChange, audit: AuditChange): Promise<FieldDefinition> {
    return this.db.transaction(async (trx) => {
      const before = await trx('user_field_definitions').where({ key }).forUpdate().first('key');
      if (!before) throw notFound(key);
      const current = (await findFieldDefinition(trx, key))!;
      const parsed = fieldDefinitionSchema.safeParse({ ...current, ...change, key });
      if (!parsed.success) throw invalid(parsed.error);
      const saved = await saveFieldDefinition(trx, parsed.data, this.now());
      await audit(trx, profileFieldAuditEventTypes.updated, { key, before: current, after: saved });
      return saved;
    });
  }

  /**
   * Deletes a definition. Users' answers to it would go with it, so a field someone answered is kept
   * (409 `field_in_use`: deactivate it instead) unless `withAnswers` says to delete them too.
   */
  async remove(
    key: string,
    options: { withAnswers: boolean },
    audit: AuditChange,
  ): Promise<{ key: string; deletedAnswers: number }> {
    return this.db.transaction(async (trx) => {
      const current = await findFieldDefinition(trx, key);
      if (!current) throw notFound(key);
      const answers = await countFieldValues(trx, key);
      if (answers > 0 && !options.withAnswers) {
        throw new ApiError(
          409,
          'field_in_use',
          `${answers} users answered the profile field ${key}: deactivate it, or delete it with its answers.`,
          { key, answers },
        );
      }
      await deleteFieldDefinition(trx, key);
      await audit(trx, profileFieldAuditEventTypes.deleted, {
        key,
        before: current,
        deletedAnswers: answers,
      });
      return { key, deletedAnswers: answers };
    });
  }
}
