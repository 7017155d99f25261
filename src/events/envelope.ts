import crypto from 'node:crypto';
import { z } from 'zod';

/**
 * The one envelope of every event the service publishes. `messageId` is the de-duplication key: the
 * broker drops a re-sent id (Nats-Msg-Id) and subscribers ignore one they have seen.
 */
export const envelopeSchema = z.object({
  messageId: z.uuid().describe('Unique id of this message; subscribers de-duplicate by it'),
  messageType: z.string().min(1).describe('What happened, e.g. platform.reference_data.changed'),
  occurredAt: z.iso.datetime({ offset: true }).describe('When the change was committed (ISO 8601)'),
  producer: z.string().min(1).describe('The service that produced the event'),
  data: z.unknown().describe('The payload; its schema depends on messageType'),
});

export type Envelope<Data = unknown> = Omit<z.infer<typeof envelopeSchema>, 'data'> & { data: Data };

/** The envelope schema with the payload schema of one message type, e.g. for JSON Schema export. */
export function envelopeOf<Type extends string, Data extends z.ZodType>(messageType: Type, data: Data) {
  return envelopeSchema.extend({ messageType: z.literal(messageType), data });
}

export function createEnvelope<Data>(
  messageType: string,
  data: Data,
  producer: string,
  occurredAt: Date,
): Envelope<Data> {
  return {
    messageId: crypto.randomUUID(),
    messageType,
    occurredAt: occurredAt.toISOString(),
    producer,
    data,
  };
}
