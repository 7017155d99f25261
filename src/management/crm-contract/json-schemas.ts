import { z } from 'zod';
import { crmEnvelopeSchema } from './crm-envelope.js';
import { crmEventSchemas, crmMessageTypeNames, crmMessageTypes } from './crm-events.js';
import {
  balanceAggregateSchema,
  payoutPeriodQuerySchema,
  periodQuerySchema,
  salesAggregateSchema,
  teacherPayoutsSchema,
} from './crm-snapshots.js';

const idBase = 'urn:identity-service:crm-contract:v1:';

function jsonSchema(schema: z.ZodType, file: string, description?: string): Record<string, unknown> {
  const generated = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any' });
  const { $schema, ...rest } = generated as Record<string, unknown>;
  return { $schema, $id: `${idBase}${file}`, ...(description ? { description } : {}), ...rest };
}

/**
 * The contract as JSON Schema (draft 2020-12), by file name: the envelope, each message type's whole
 * envelope, each snapshot's query and answer. Written to docs/crm-contract/schemas by
 * `npm run crm-contract:schemas`; a test checks the committed files are current. Checks JSON Schema
 * can't say (payment PII anywhere in a message, ISO 4217 membership, card-number-shaped ids) are in
 * the descriptions and enforced by the zod schemas.
 */
export function crmContractJsonSchemas(): Record<string, Record<string, unknown>> {
  const files: Record<string, Record<string, unknown>> = {
    'envelope.json': jsonSchema(
      crmEnvelopeSchema,
      'envelope.json',
      'Envelope of every crm event. A message carrying payment PII (card numbers, CVC, bank accounts, a name with an identity document) anywhere is refused.',
    ),
  };
  for (const type of crmMessageTypeNames) {
    const { entity, status, financial } = crmMessageTypes[type];
    files[`events/${type}.json`] = jsonSchema(
      crmEventSchemas[type],
      `events/${type}.json`,
      `${type}: a ${financial ? 'financial ' : ''}${entity} record after the change (status ${status}). Payment PII anywhere in the message is refused.`,
    );
  }
  files['snapshots/sales.query.json'] = jsonSchema(periodQuerySchema, 'snapshots/sales.query.json');
  files['snapshots/sales.json'] = jsonSchema(salesAggregateSchema, 'snapshots/sales.json');
  files['snapshots/balance.json'] = jsonSchema(balanceAggregateSchema, 'snapshots/balance.json');
  files['snapshots/teacher-payouts.query.json'] = jsonSchema(
    payoutPeriodQuerySchema,
    'snapshots/teacher-payouts.query.json',
  );
  files['snapshots/teacher-payouts.json'] = jsonSchema(
    teacherPayoutsSchema,
    'snapshots/teacher-payouts.json',
  );
  return files;
}
