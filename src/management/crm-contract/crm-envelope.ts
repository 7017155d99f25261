import crypto from 'node:crypto';
import { z } from 'zod';
import { findPaymentPii } from './payment-pii.js';
import { instantSchema } from './value-formats.js';

/** Who publishes the events of this contract. */
export const crmSource = 'crm';

/**
 * The version of the contract's schemas a message follows. A change that a consumer of the previous
 * version could misread (a new field, a new status, a changed meaning) is a new version; management
 * sends messages of a version it does not know to the dead-letter table, to be replayed once it does.
 */
export const crmSchemaVersion = 1;

/** The envelope of every crm event; `data` depends on `messageType`. */
export const crmEnvelopeSchema = z.strictObject({
  messageId: z.uuid().describe('Unique id of this message; management de-duplicates by it'),
  messageType: z.string().min(1).max(100).describe('What happened, e.g. crm.invoice.paid (also the subject)'),
  occurredAt: instantSchema.describe('When the change happened in crm'),
  source: z.literal(crmSource).describe('The producing system'),
  schemaVersion: z.literal(crmSchemaVersion).describe('Version of the contract this message follows'),
  data: z.unknown().describe('The record after the change; its schema depends on messageType'),
});

export type CrmEnvelope<Data = unknown> = Omit<z.infer<typeof crmEnvelopeSchema>, 'data'> & { data: Data };

/** A message is checked for payment PII first: a message carrying any is refused whole. */
export function refusingPaymentPii<Schema extends z.ZodType>(schema: Schema) {
  return z
    .unknown()
    .superRefine((value, ctx) => {
      for (const path of findPaymentPii(value)) {
        ctx.addIssue({
          code: 'custom',
          message: 'payment PII (card, bank account, identity document) is not allowed in crm events',
          path: path.split('.'),
        });
      }
    })
    .pipe(schema);
}

/** The envelope of one message type, with its data schema, refusing payment PII. */
export function crmEnvelopeOf<Type extends string, Data extends z.ZodType>(messageType: Type, data: Data) {
  return refusingPaymentPii(crmEnvelopeSchema.extend({ messageType: z.literal(messageType), data }));
}

/** An envelope for the crm side to publish: a fresh messageId unless one is given. */
export function createCrmEnvelope<Data>(
  messageType: string,
  data: Data,
  options: { occurredAt: Date | string; messageId?: string },
): CrmEnvelope<Data> {
  return {
    messageId: options.messageId ?? crypto.randomUUID(),
    messageType,
    occurredAt: new Date(options.occurredAt).toISOString(),
    source: crmSource,
    schemaVersion: crmSchemaVersion,
    data,
  };
}
