import type { Knex } from 'knex';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { findRecords, recordKey, upsertRecords, type CrmRecord } from '../records/crm-records-repository.js';
import { applyTotalChanges } from '../records/daily-totals-repository.js';
import { addContributions, contributionsOf, type Contribution } from '../records/record-contributions.js';
import {
  classifyCrmMessage,
  type ClassifiedMessage,
  type DeadLetterMessage,
  type RejectedMessage,
  type ValidCrmMessage,
} from './classify-crm-message.js';
import { storedMessageIds, storeNewEvents } from './crm-event-store.js';
import { contractRules, type CrmRules } from './crm-rules.js';
import { refusingPastRetention } from './past-retention.js';
import { recordDeadLetters } from './dead-letters.js';
import { recordIntegrationErrors } from './integration-errors.js';

export interface IngestionDeps {
  db: Database;
  clock: Clock;
  /** What is accepted; the contract's rules unless given. */
  rules?: CrmRules;
}

/** What a batch did, message by message, summed. */
export interface IngestionOutcome {
  /** New records or newer versions, now kept. */
  applied: number;
  /** New messages whose record was already kept at this or a newer version. */
  superseded: number;
  /** Messages processed before (same messageId). */
  duplicate: number;
  deadLettered: number;
  rejected: number;
}

// Any constant: every node and the CLI agree on it (the cleanup uses 4_711_2026).
const ingestionLockKey = 4_712_2026;

/**
 * Applies a batch of crm messages (JSON texts or parsed objects) in ONE transaction: the event store
 * de-duplicates by messageId, records are replaced only by greater versions, the daily totals move by
 * the difference, dead letters and integration errors are written. Either all of it commits or none,
 * so a crash before the commit (or before the broker's ack after it) only means a redelivery, which
 * the event store then drops. Batches are applied one at a time (a transaction-scoped advisory lock),
 * whichever node or process runs them: the totals are read and changed by one batch at a time.
 */
export async function ingestCrmMessages(deps: IngestionDeps, bodies: unknown[]): Promise<IngestionOutcome> {
  const rules = deps.rules ?? contractRules;
  const now = deps.clock.now();
  const classified = bodies.map((body) => refusingPastRetention(classifyCrmMessage(body, rules), now));
  return deps.db.transaction(async (trx) => (await applyClassifiedMessages(trx, classified, now)).outcome);
}

export async function applyClassifiedMessages(
  trx: Knex.Transaction,
  classified: ClassifiedMessage[],
  now: Date,
): Promise<{ outcome: IngestionOutcome; storedIds: Set<string> }> {
  await trx.raw('select pg_advisory_xact_lock(?)', [ingestionLockKey]);
  const valid: ValidCrmMessage[] = [];
  const deadLetters: DeadLetterMessage[] = [];
  const rejected: RejectedMessage[] = [];
  for (const message of classified) {
    if (message.outcome === 'valid') valid.push(message);
    else if (message.outcome === 'dead_letter') deadLetters.push(message);
    else rejected.push(message);
  }

  // The same message twice in one batch: the first one counts.
  const firstOfEach = new Map<string, ValidCrmMessage>();
  for (const message of valid)
    if (!firstOfEach.has(message.messageId)) firstOfEach.set(message.messageId, message);
  const storedIds = await storeNewEvents(trx, [...firstOfEach.values()], now);
  const fresh = [...firstOfEach.values()].filter((message) => storedIds.has(message.messageId));

  // Per record, the greatest version of the batch is the only candidate.
  const candidates = new Map<string, ValidCrmMessage>();
  for (const message of fresh) {
    const key = recordKey(message.entity, message.recordId);
    const best = candidates.get(key);
    if (!best || message.version > best.version) candidates.set(key, message);
  }
  const kept = await findRecords(
    trx,
    [...candidates.values()].map((message) => ({ entity: message.entity, recordId: message.recordId })),
  );
  const changes = new Map<string, Contribution>();
  const newer: CrmRecord[] = [];
  for (const [key, message] of candidates) {
    const old = kept.get(key);
    if (old && old.version >= message.version) continue;
    if (old) addContributions(changes, contributionsOf(old.entity, old.data), -1);
    addContributions(changes, contributionsOf(message.entity, message.data), 1);
    newer.push({
      entity: message.entity,
      recordId: message.recordId,
      status: message.status,
      version: message.version,
      occurredAt: message.occurredAt,
      messageId: message.messageId,
      data: message.data,
    });
  }
  await upsertRecords(trx, newer, now);
  await applyTotalChanges(trx, changes.values());

  // A dead letter already in the store was replayed and applied since: a redelivery of it is a duplicate.
  const replayed = await storedMessageIds(
    trx,
    deadLetters.map((message) => message.messageId),
  );
  const stillDead = deadLetters.filter((message) => !replayed.has(message.messageId));
  await recordDeadLetters(trx, stillDead, now);
  await recordIntegrationErrors(trx, rejected, now);

  return {
    storedIds,
    outcome: {
      applied: newer.length,
      superseded: fresh.length - newer.length,
      duplicate: valid.length - fresh.length + (deadLetters.length - stillDead.length),
      deadLettered: stillDead.length,
      rejected: rejected.length,
    },
  };
}

/**
 * A message the batch could not take even alone, on its last delivery: kept as a dead letter with the
 * error (or, when it has no usable messageId, refused with an integration error), so the broker's
 * bounded redelivery never drops a message silently.
 */
export async function setAsideUnprocessable(
  deps: IngestionDeps,
  body: unknown,
  error: unknown,
): Promise<'dead_lettered' | 'rejected'> {
  const rules = deps.rules ?? contractRules;
  const classified = classifyCrmMessage(body, rules);
  const now = deps.clock.now();
  const detail = `processing failed: ${error instanceof Error ? error.message : String(error)}`.slice(
    0,
    2000,
  );
  return deps.db.transaction(async (trx) => {
    if (classified.outcome === 'rejected') {
      await recordIntegrationErrors(trx, [classified], now);
      return 'rejected';
    }
    const envelope = classified.envelope;
    await recordDeadLetters(
      trx,
      [
        {
          outcome: 'dead_letter',
          messageId: classified.messageId,
          messageType: classified.messageType,
          reason: 'processing_failed',
          detail,
          envelope,
        },
      ],
      now,
    );
    return 'dead_lettered';
  });
}
