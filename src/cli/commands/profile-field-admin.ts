import { z } from 'zod';
import { auditCliChange } from '../../admin/admin-audit.js';
import {
  fieldDefinitionChangeSchema,
  FieldDefinitionAdministration,
  type AuditChange,
  type FieldDefinitionChange,
} from '../../identity/profile-fields/field-administration.js';
import {
  fieldKeySchema,
  listFieldDefinitions,
  profileFieldTypes,
} from '../../identity/profile-fields/field-definitions.js';
import { UsageError, type CliCommand, type CommandContext, type OptionValues } from '../command.js';
import { describeZodError } from '../describe-zod-error.js';

const administration = (context: CommandContext) =>
  new FieldDefinitionAdministration(context.db, () => context.clock.now());
const auditCli =
  (context: CommandContext): AuditChange =>
  (trx, type, details) =>
    auditCliChange(trx, type, details, context.clock.now());

function keyOf(values: OptionValues): string {
  const parsed = fieldKeySchema.safeParse(values.key);
  if (!parsed.success) throw new UsageError(`--key: ${parsed.error.issues[0]!.message}`);
  return parsed.data;
}

/** `--validation '{"pattern":"[0-9]{12}"}'`: the field's rules as JSON. */
function validationOf(value: unknown): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(String(value));
  } catch {
    throw new UsageError('--validation must be a JSON object, e.g. {"maxLength": 100}');
  }
}

const flag = z.enum(['true', 'false']).transform((value) => value === 'true');
const changeOptions = z.object({
  title: z.string().optional(),
  type: z.enum(profileFieldTypes).optional(),
  required: flag.optional(),
  order: z.coerce.number().int().optional(),
  active: flag.optional(),
});

/** The properties the options give (and only those: an update changes nothing else). */
function changeOf(values: OptionValues): FieldDefinitionChange {
  const parsed = changeOptions.safeParse(values);
  if (!parsed.success) throw new UsageError(describeZodError(parsed.error));
  const { title, type, required, order, active } = parsed.data;
  const validation = validationOf(values.validation);
  const change = fieldDefinitionChangeSchema.safeParse({
    ...(title !== undefined ? { title } : {}),
    ...(type !== undefined ? { type } : {}),
    ...(required !== undefined ? { required } : {}),
    ...(order !== undefined ? { order } : {}),
    ...(active !== undefined ? { isActive: active } : {}),
    ...(validation !== undefined ? { validation } : {}),
  });
  if (!change.success) throw new UsageError(describeZodError(change.error));
  return change.data;
}

const fieldOptions = {
  key: { type: 'string' },
  title: { type: 'string' },
  type: { type: 'string' },
  required: { type: 'string' },
  order: { type: 'string' },
  active: { type: 'string' },
  validation: { type: 'string' },
} as const;

export const profileFieldsListCommand: CliCommand = {
  name: 'profile-fields:list',
  usage: 'profile-fields:list',
  summary: 'Show every registration profile field, active or not, in order',
  options: {},
  needsDatabase: true,
  async run(_values, context) {
    return { fields: await listFieldDefinitions(context!.db) };
  },
};

export const profileFieldsCreateCommand: CliCommand = {
  name: 'profile-fields:create',
  usage: `profile-fields:create --key K --title T --type ${profileFieldTypes.join('|')} [--required true|false] [--order N] [--active true|false] [--validation JSON]`,
  summary: 'Create a registration profile field (docs/profile-fields.md)',
  options: fieldOptions,
  needsDatabase: true,
  parse(values) {
    const key = keyOf(values);
    const change = changeOf(values);
    if (change.title === undefined || change.type === undefined) {
      throw new UsageError('a new field needs --title and --type');
    }
    return { key, ...change };
  },
  async run(input: FieldDefinitionChange & { key: string }, context) {
    return administration(context!).create(input, auditCli(context!));
  },
};

export const profileFieldsUpdateCommand: CliCommand = {
  name: 'profile-fields:update',
  usage:
    'profile-fields:update --key K [--title T] [--type TYPE] [--required true|false] [--order N] [--active true|false] [--validation JSON]',
  summary: 'Change a registration profile field (what the options give; the key stays)',
  options: fieldOptions,
  needsDatabase: true,
  parse(values) {
    const key = keyOf(values);
    const change = changeOf(values);
    if (Object.keys(change).length === 0) throw new UsageError('give at least one property to change');
    return { key, change };
  },
  async run({ key, change }: { key: string; change: FieldDefinitionChange }, context) {
    return administration(context!).update(key, change, auditCli(context!));
  },
};

export const profileFieldsDeleteCommand: CliCommand = {
  name: 'profile-fields:delete',
  usage: 'profile-fields:delete --key K [--with-answers]',
  summary: 'Delete a registration profile field (one users answered only with --with-answers)',
  options: { key: { type: 'string' }, 'with-answers': { type: 'boolean' } },
  needsDatabase: true,
  parse(values) {
    return { key: keyOf(values), withAnswers: values['with-answers'] === true };
  },
  async run({ key, withAnswers }: { key: string; withAnswers: boolean }, context) {
    const removed = await administration(context!).remove(key, { withAnswers }, auditCli(context!));
    return { ...removed, deleted: true };
  },
};
