import type { CrmEntity } from '../crm-contract/crm-events.js';
import { crmIdSchema } from '../crm-contract/value-formats.js';
import { findPaymentPii } from '../crm-contract/payment-pii.js';
import { jsonBodyProblem } from '../../http/storable-input.js';
import { isUuid } from '../../identity/uuid.js';
import type { CrmRules } from './crm-rules.js';

/** Why a message is kept aside to be replayed once management is fixed (docs/crm-contract.md). */
export type DeadLetterReason =
  | 'unknown_message_type'
  | 'unsupported_schema_version'
  | 'unknown_status'
  | 'invalid_payload'
  | 'processing_failed';

/**
 * Why a message is refused for good: it can't be identified, must not be kept, or could not be
 * de-duplicated (past_retention: ingestion/past-retention.ts).
 */
export type RejectionReason = 'malformed' | 'payment_pii' | 'missing_id' | 'past_retention';

/** A message that can be applied: the record it carries, with its key and version. */
export interface ValidCrmMessage {
  outcome: 'valid';
  messageId: string;
  messageType: string;
  entity: CrmEntity;
  recordId: string;
  version: number;
  status: string;
  occurredAt: string;
  data: Record<string, unknown>;
  envelope: Record<string, unknown>;
}

export interface DeadLetterMessage {
  outcome: 'dead_letter';
  messageId: string;
  messageType: string;
  reason: DeadLetterReason;
  detail: string;
  envelope: Record<string, unknown>;
}

export interface RejectedMessage {
  outcome: 'rejected';
  reason: RejectionReason;
  /** What is missing or wrong, by path; never a value of the message. */
  detail: string;
  messageId?: string;
  messageType?: string;
}

export type ClassifiedMessage = ValidCrmMessage | DeadLetterMessage | RejectedMessage;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** At most 100 characters of a text, if the database can store them (no NUL, no lone surrogate). */
function shortText(value: unknown): string | undefined {
  const text = typeof value === 'string' ? value.slice(0, 100) : undefined;
  return text !== undefined && jsonBodyProblem(text) === undefined ? text : undefined;
}

/**
 * Why the message can't be stored, if it can't: PostgreSQL's jsonb refuses the NUL character and lone
 * UTF-16 surrogates, and JSON.stringify before it recurses as deep as the message nests
 * (http/storable-input.ts). Such a message could be neither applied nor kept as a dead letter: each
 * delivery failed its whole batch, which was then applied one message at a time, until the broker
 * dropped it. Where a key is what can't be stored, only its parent's path is named.
 */
function unstorable(message: Record<string, unknown>): string | undefined {
  const problem = jsonBodyProblem(message);
  if (!problem) return undefined;
  const segments = problem.path.split('.');
  const badKey = segments.findIndex((segment) => jsonBodyProblem(segment) !== undefined);
  const detail =
    badKey < 0
      ? `${problem.path || '(message)'}: ${problem.message}`
      : `${segments.slice(0, badKey).join('.') || '(message)'}: a key ${problem.message}`;
  // Keys may be long; cut by code points, as cutting a surrogate pair in two would make it unstorable.
  return Array.from(detail).slice(0, 500).join('');
}

/**
 * Sorts one delivered message (a JSON text or an already parsed object) into valid, dead letter or
 * rejected, in the order docs/crm-contract.md gives: what the database can't store, payment PII and
 * missing ids first (refused, nothing kept), then what a fixed management could apply (dead letters), then the full schema.
 */
export function classifyCrmMessage(body: unknown, rules: CrmRules): ClassifiedMessage {
  let message = body;
  if (typeof body === 'string') {
    try {
      message = JSON.parse(body);
    } catch {
      return { outcome: 'rejected', reason: 'malformed', detail: 'the message is not JSON' };
    }
  }
  if (!isObject(message)) {
    return { outcome: 'rejected', reason: 'malformed', detail: 'the message is not a JSON object' };
  }
  const messageType = shortText(message.messageType);
  // Before the payment PII: its paths, which the audit entry names, are keys that may be unstorable.
  const unstorableDetail = unstorable(message);
  if (unstorableDetail) {
    return {
      outcome: 'rejected',
      reason: 'malformed',
      detail: unstorableDetail,
      ...(typeof message.messageId === 'string' && isUuid(message.messageId)
        ? { messageId: message.messageId.toLowerCase() }
        : {}),
      ...(messageType ? { messageType } : {}),
    };
  }
  const piiPaths = findPaymentPii(message);
  if (piiPaths.length > 0) {
    return {
      outcome: 'rejected',
      reason: 'payment_pii',
      detail: `payment PII at ${piiPaths.join(', ')}`,
      ...(typeof message.messageId === 'string' && isUuid(message.messageId)
        ? { messageId: message.messageId }
        : {}),
      ...(messageType ? { messageType } : {}),
    };
  }
  if (typeof message.messageId !== 'string' || !isUuid(message.messageId)) {
    return {
      outcome: 'rejected',
      reason: 'missing_id',
      detail: message.messageId === undefined ? 'messageId is missing' : 'messageId is not a UUID',
      ...(messageType ? { messageType } : {}),
    };
  }
  const messageId = message.messageId.toLowerCase();
  const deadLetter = (reason: DeadLetterReason, detail: string): DeadLetterMessage => ({
    outcome: 'dead_letter',
    messageId,
    messageType: messageType ?? '',
    reason,
    detail,
    envelope: message,
  });

  const type = messageType === undefined ? undefined : rules.messageTypes[messageType];
  if (!type) {
    return deadLetter(
      'unknown_message_type',
      `messageType ${JSON.stringify(messageType ?? null)} is not known`,
    );
  }
  const entity = rules.entities[type.entity];
  const data = isObject(message.data) ? message.data : undefined;
  const recordId = crmIdSchema.safeParse(data?.[entity.naturalKey]);
  if (!recordId.success) {
    return {
      outcome: 'rejected',
      reason: 'missing_id',
      detail:
        data?.[entity.naturalKey] === undefined
          ? `data.${entity.naturalKey} is missing`
          : `data.${entity.naturalKey} is not a valid id`,
      messageId,
      messageType: messageType!,
    };
  }
  if (typeof message.schemaVersion !== 'number' || !rules.schemaVersions.has(message.schemaVersion)) {
    return deadLetter(
      'unsupported_schema_version',
      `schemaVersion ${JSON.stringify(message.schemaVersion ?? null)} is not one of ${[...rules.schemaVersions].join(', ')}`,
    );
  }
  if (typeof data?.status === 'string' && !entity.statuses.includes(data.status)) {
    return deadLetter(
      'unknown_status',
      `status ${JSON.stringify(data.status.slice(0, 40))} is not a ${type.entity} status (${entity.statuses.join(', ')})`,
    );
  }
  const parsed = type.envelope.safeParse(message);
  if (!parsed.success) {
    return deadLetter(
      'invalid_payload',
      parsed.error.issues
        .slice(0, 10)
        .map((issue) => `${issue.path.join('.') || '(message)'}: ${issue.message}`)
        .join('; '),
    );
  }
  const envelope = parsed.data as Record<string, unknown> & { data: Record<string, unknown> };
  return {
    outcome: 'valid',
    messageId,
    messageType: messageType!,
    entity: type.entity,
    recordId: recordId.data,
    version: envelope.data.version as number,
    status: envelope.data.status as string,
    occurredAt: envelope.occurredAt as string,
    data: envelope.data,
    envelope,
  };
}
