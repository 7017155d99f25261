import { classifyCrmMessage, type DeadLetterReason } from './classify-crm-message.js';
import { contractRules } from './crm-rules.js';
import { findDeadLetter, listDeadLetters, markReplayed, type DeadLetter } from './dead-letters.js';
import { applyClassifiedMessages, type IngestionDeps } from './ingest-crm-messages.js';
import { refusingPastRetention } from './past-retention.js';

export interface ReplayResult {
  messageId: string;
  messageType: string;
  /** applied: taken in now; duplicate: the store had it; still_failing: kept, with the current reason. */
  outcome: 'applied' | 'duplicate' | 'still_failing' | 'not_found' | 'already_replayed';
  reason?: DeadLetterReason | string;
  detail?: string;
}

/**
 * Replays dead letters through the current rules (after a fix: a new status, schema version or message
 * type management now knows). Those the rules now accept are applied exactly as a delivery would be,
 * in one transaction with their being marked replayed; the others stay, with the reason they fail for
 * now. Nothing is counted as seen again.
 */
export async function replayDeadLetters(
  deps: IngestionDeps,
  selection: { messageIds: string[] } | { all: true; reason?: string },
): Promise<ReplayResult[]> {
  const rules = deps.rules ?? contractRules;
  const results: ReplayResult[] = [];
  let letters: DeadLetter[];
  if ('messageIds' in selection) {
    letters = [];
    for (const messageId of selection.messageIds) {
      const letter = await findDeadLetter(deps.db, messageId);
      if (!letter) results.push({ messageId, messageType: '', outcome: 'not_found' });
      else if (letter.replayedAt)
        results.push({ messageId, messageType: letter.messageType, outcome: 'already_replayed' });
      else letters.push(letter);
    }
  } else {
    letters = await listDeadLetters(deps.db, {
      limit: 100_000,
      ...(selection.reason ? { reason: selection.reason } : {}),
    });
  }

  const batchSize = 500;
  for (let start = 0; start < letters.length; start += batchSize) {
    const batch = letters.slice(start, start + batchSize);
    const now = deps.clock.now();
    const classified = batch.map((letter) =>
      refusingPastRetention(classifyCrmMessage(letter.envelope, rules), now),
    );
    await deps.db.transaction(async (trx) => {
      const accepted = classified.filter((message) => message.outcome === 'valid');
      const { storedIds } = await applyClassifiedMessages(trx, accepted, now);
      const replayed: { messageId: string; outcome: 'applied' | 'duplicate' }[] = [];
      for (const [index, message] of classified.entries()) {
        const letter = batch[index]!;
        if (message.outcome === 'valid') {
          const outcome = storedIds.has(message.messageId) ? 'applied' : 'duplicate';
          replayed.push({ messageId: letter.messageId, outcome });
          results.push({ messageId: letter.messageId, messageType: letter.messageType, outcome });
          continue;
        }
        const reason = message.reason;
        await trx('crm_dead_letters')
          .where({ message_id: letter.messageId })
          .update({ reason: reason.slice(0, 40), detail: message.detail.slice(0, 2000) });
        results.push({
          messageId: letter.messageId,
          messageType: letter.messageType,
          outcome: 'still_failing',
          reason,
          detail: message.detail,
        });
      }
      await markReplayed(trx, replayed, now);
    });
  }
  return results;
}
