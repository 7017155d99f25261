import type { Queryable } from '../../db/database.js';
import { writeAuditEvent } from '../../identity/audit/audit-log.js';
import type { RejectedMessage } from './classify-crm-message.js';

/** The audit type of a refused crm message (spec: a crm event without a required id is rejected and an integration error written to the audit). */
export const crmIntegrationErrorType = 'management.crm.integration_error';

/** One audit entry per refused message: the reason and the paths, never the message itself. */
export async function recordIntegrationErrors(
  db: Queryable,
  rejected: RejectedMessage[],
  now: Date,
): Promise<void> {
  for (const message of rejected) {
    await writeAuditEvent(
      db,
      {
        type: crmIntegrationErrorType,
        details: {
          source: 'crm',
          reason: message.reason,
          detail: message.detail,
          ...(message.messageId ? { messageId: message.messageId } : {}),
          ...(message.messageType ? { messageType: message.messageType } : {}),
        },
      },
      now,
    );
  }
}
