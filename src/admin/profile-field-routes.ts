import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { requirePermission } from '../http/bearer-auth.js';
import {
  fieldDefinitionChangeSchema,
  FieldDefinitionAdministration,
  type AuditChange,
} from '../identity/profile-fields/field-administration.js';
import {
  fieldDefinitionFields,
  fieldKeySchema,
  fieldValidationSchema,
  listFieldDefinitions,
  profileFieldTypes,
} from '../identity/profile-fields/field-definitions.js';
import { auditAdminChange } from './admin-audit.js';
import type { AdminRoutes } from './admin-api.js';

export const manageProfileFieldsPermission = 'identity.profile_fields.manage';

const fieldSchema = z
  .object({
    key: z.string(),
    title: z.string(),
    type: z.enum(profileFieldTypes),
    required: z.boolean(),
    validation: fieldValidationSchema,
    order: z.number().int(),
    isActive: z.boolean(),
  })
  .meta({ id: 'ProfileField' });
const createBody = fieldDefinitionFields.meta({ id: 'ProfileFieldCreate' });
const changeBody = fieldDefinitionChangeSchema.meta({ id: 'ProfileFieldChange' });
const keyParams = z.object({ key: fieldKeySchema.describe('The field’s key') });
const deleteQuery = z.object({
  withAnswers: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true')
    .describe('Also delete the answers users gave (else a field someone answered is refused)'),
});

const errors = {
  400: { description: 'Bad input (the JSON error body names the fields)' },
  401: { description: 'No valid access token, or (changes) no recent authentication' },
  403: { description: 'The token does not carry identity.profile_fields.manage' },
};

/**
 * Registration profile fields (table user_field_definitions, docs/profile-fields.md) for
 * administrators: list, create, change, delete. Changes need a recent authentication, are checked whole
 * against the definition rules and audited with what changed.
 */
export function profileFieldRoutes(deps: { db: Database; clock: Clock }): AdminRoutes {
  const { db, clock } = deps;
  const tags = ['Profile fields'];
  const permission = requirePermission(manageProfileFieldsPermission);
  const fields = new FieldDefinitionAdministration(db, () => clock.now());
  const auditOf =
    (ctx: Parameters<typeof auditAdminChange>[1]): AuditChange =>
    (trx, type, details) =>
      auditAdminChange(trx, ctx, type, details, clock.now());

  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/profile-fields',
        summary: 'Every registration profile field, active or not, in order',
        tags,
        security: 'bearer',
        responses: {
          200: { description: 'The fields', schema: z.object({ fields: z.array(fieldSchema) }) },
          ...errors,
        },
      },
      permission,
      async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { fields: await listFieldDefinitions(db) };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/profile-fields',
        summary: 'Create a registration profile field',
        tags,
        security: 'bearer',
        reauthentication: true,
        body: createBody,
        responses: {
          201: { description: 'Created', schema: fieldSchema },
          ...errors,
          409: { description: 'A field with that key exists (field_exists)' },
        },
      },
      permission,
      async (ctx, body) => {
        ctx.body = await fields.create(body, auditOf(ctx));
        ctx.status = 201;
      },
    );

    api.add(
      {
        method: 'patch',
        path: '/profile-fields/:key',
        summary: 'Change a registration profile field (any of its properties but the key)',
        tags,
        security: 'bearer',
        reauthentication: true,
        params: keyParams,
        body: changeBody,
        responses: {
          200: { description: 'The field now', schema: fieldSchema },
          ...errors,
          404: { description: 'No such field (field_not_found)' },
        },
      },
      permission,
      async (ctx, body, { params }) => {
        ctx.body = await fields.update(params.key, body, auditOf(ctx));
      },
    );

    api.add(
      {
        method: 'delete',
        path: '/profile-fields/:key',
        summary: 'Delete a registration profile field',
        tags,
        security: 'bearer',
        reauthentication: true,
        params: keyParams,
        query: deleteQuery,
        responses: {
          200: {
            description: 'Deleted',
            schema: z.object({ key: z.string(), deleted: z.literal(true), deletedAnswers: z.number().int() }),
          },
          ...errors,
          404: { description: 'No such field (field_not_found)' },
          409: { description: 'Users answered it (field_in_use): deactivate it, or pass withAnswers=true' },
        },
      },
      permission,
      async (ctx, _body, { params, query }) => {
        const removed = await fields.remove(params.key, { withAnswers: query.withAnswers }, auditOf(ctx));
        ctx.body = { key: removed.key, deleted: true, deletedAnswers: removed.deletedAnswers };
      },
    );
  };
}
