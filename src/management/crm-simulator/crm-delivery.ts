import type { CrmEnvelope } from '../crm-contract/crm-envelope.js';
import { crmEntities, crmMessageTypes, isCrmMessageType } from '../crm-contract/crm-events.js';
import { SeededRandom } from './seeded-random.js';

export interface DeliveryChaos {
  seed: number;
  /** Every message is delivered this many times in all (1 = once). */
  copies?: number;
  /** Deliver in a random order instead of crm's. */
  shuffle?: boolean;
  /** Extra messages with a status the contract doesn't know (crm's invoices turned partially_paid). */
  unknownStatuses?: number;
  /** Extra messages without a messageId or a natural key. */
  missingIds?: number;
  /** Extra messages carrying a card number. */
  paymentPii?: number;
  /** Extra texts that are not JSON. */
  malformed?: number;
}

export interface Delivery {
  /** What goes on the wire, in delivery order. */
  texts: string[];
  /** messageIds of the messages that should end up as dead letters. */
  deadLetterIds: string[];
  /** How many messages should be refused (missing ids, payment PII, malformed). */
  rejected: number;
}

/**
 * What a broker and a careless producer make of crm's history: every message several times, in any
 * order, with poison mixed in (unknown statuses, missing ids, payment data, broken JSON). The poison
 * never belongs to the history: the ground truth stays what the valid messages say.
 */
export function chaoticDelivery(history: CrmEnvelope[], chaos: DeliveryChaos): Delivery {
  const random = new SeededRandom(chaos.seed);
  const messages: unknown[] = [];
  for (const envelope of history)
    for (let copy = 0; copy < (chaos.copies ?? 1); copy += 1) messages.push(envelope);
  const invoices = history.filter((envelope) => envelope.messageType.startsWith('crm.invoice.'));
  const deadLetterIds: string[] = [];
  for (let index = 0; index < (chaos.unknownStatuses ?? 0) && invoices.length > 0; index += 1) {
    const original = random.pick(invoices);
    const data = original.data as Record<string, unknown>;
    const poison = {
      ...original,
      messageId: random.uuid(),
      messageType: 'crm.invoice.paid',
      data: {
        ...data,
        status: 'partially_paid',
        paidAt: original.occurredAt,
        version: Number(data.version) + 1000,
      },
    };
    deadLetterIds.push(poison.messageId);
    messages.push(poison, poison);
  }
  let rejected = 0;
  for (let index = 0; index < (chaos.missingIds ?? 0); index += 1) {
    const original = random.pick(history);
    if (index % 2 === 0) {
      const { messageId: _messageId, ...withoutId } = original;
      messages.push(withoutId);
    } else if (isCrmMessageType(original.messageType)) {
      const key = crmEntities[crmMessageTypes[original.messageType].entity].naturalKey;
      const { [key]: _key, ...data } = original.data as Record<string, unknown>;
      messages.push({ ...original, messageId: random.uuid(), data });
    }
    rejected += 1;
  }
  for (let index = 0; index < (chaos.paymentPii ?? 0); index += 1) {
    const original = random.pick(history);
    messages.push({
      ...original,
      messageId: random.uuid(),
      data: { ...(original.data as object), cardNumber: '4111 1111 1111 1111' },
    });
    rejected += 1;
  }
  const texts = messages.map((message) => JSON.stringify(message));
  for (let index = 0; index < (chaos.malformed ?? 0); index += 1) {
    texts.push('{"messageId": "broken');
    rejected += 1;
  }
  return { texts: chaos.shuffle ? random.shuffle(texts) : texts, deadLetterIds, rejected };
}
