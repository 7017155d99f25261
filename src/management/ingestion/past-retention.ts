import { crmRetentionCutoff } from '../retention/crm-retention.js';
import type { ClassifiedMessage } from './classify-crm-message.js';

/**
 * A valid message whose occurredAt is before the 7-year retention is refused (past_retention). Kept,
 * its event and record would be deleted by the next hourly cleanup (both go by occurredAt), while its
 * figures, which go by the record's own dates (processedAt, issuedAt, …) and into the all-time totals,
 * stay: a redelivery of the same message would then find no trace of it and be counted again, once per
 * redelivery. So crm (or whoever can publish on crm.>) could grow this month's revenue and the balance
 * with one message sent again and again, and the de-duplication by messageId would not see it.
 */
export function refusingPastRetention(message: ClassifiedMessage, now: Date): ClassifiedMessage {
  if (message.outcome !== 'valid') return message;
  const cutoff = crmRetentionCutoff(now);
  if (Date.parse(message.occurredAt) >= cutoff.getTime()) return message;
  return {
    outcome: 'rejected',
    reason: 'past_retention',
    detail: `occurredAt is before the 7-year retention (${cutoff.toISOString()})`,
    messageId: message.messageId,
    messageType: message.messageType,
  };
}
