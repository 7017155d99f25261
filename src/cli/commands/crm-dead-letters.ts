import { isUuid } from '../../identity/uuid.js';
import { findDeadLetter, listDeadLetters } from '../../management/ingestion/dead-letters.js';
import { replayDeadLetters } from '../../management/ingestion/replay-dead-letters.js';
import { UsageError, type CliCommand } from '../command.js';

const messageIdOf = (value: unknown): string => {
  if (typeof value !== 'string' || !isUuid(value))
    throw new UsageError('--message-id must be a message id (UUID)');
  return value.toLowerCase();
};

export const deadLettersListCommand: CliCommand = {
  name: 'crm:dead-letters:list',
  usage: 'crm:dead-letters:list [--reason R] [--all] [--limit N]',
  summary:
    'crm messages set aside (unknown status, schema version...), oldest first; --all with replayed ones',
  options: { reason: { type: 'string' }, all: { type: 'boolean' }, limit: { type: 'string' } },
  needsDatabase: true,
  parse(values) {
    const limit = values.limit === undefined ? 100 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      throw new UsageError('--limit must be 1 to 10000');
    return { reason: values.reason as string | undefined, all: Boolean(values.all), limit };
  },
  async run(input: { reason?: string; all: boolean; limit: number }, context) {
    const letters = await listDeadLetters(context!.db, {
      includeReplayed: input.all,
      limit: input.limit,
      ...(input.reason ? { reason: input.reason } : {}),
    });
    // The list names and explains; `show` prints the payload.
    return letters.map(({ envelope: _envelope, ...letter }) => letter);
  },
};

export const deadLettersShowCommand: CliCommand = {
  name: 'crm:dead-letters:show',
  usage: 'crm:dead-letters:show --message-id M',
  summary: 'One dead letter with its payload',
  options: { 'message-id': { type: 'string' } },
  needsDatabase: true,
  parse: (values) => messageIdOf(values['message-id']),
  async run(messageId: string, context) {
    const letter = await findDeadLetter(context!.db, messageId);
    if (!letter) throw new UsageError(`no dead letter with message id ${messageId}`);
    return letter;
  },
};

export const deadLettersReplayCommand: CliCommand = {
  name: 'crm:dead-letters:replay',
  usage: 'crm:dead-letters:replay --message-id M... | --all [--reason R]',
  summary:
    'Apply dead letters the current version accepts (after a fix); the others stay, with their reason now',
  options: {
    'message-id': { type: 'string', multiple: true },
    all: { type: 'boolean' },
    reason: { type: 'string' },
  },
  needsDatabase: true,
  parse(values) {
    const ids = values['message-id'] as string[] | undefined;
    if (values.all && ids) throw new UsageError('give --message-id or --all, not both');
    if (values.all)
      return { all: true as const, ...(values.reason ? { reason: values.reason as string } : {}) };
    if (!ids || ids.length === 0) throw new UsageError('give --message-id M (repeatable) or --all');
    return { messageIds: ids.map(messageIdOf) };
  },
  async run(selection: { messageIds: string[] } | { all: true; reason?: string }, context) {
    const results = await replayDeadLetters({ db: context!.db, clock: context!.clock }, selection);
    const count = (outcome: string) => results.filter((result) => result.outcome === outcome).length;
    return {
      applied: count('applied'),
      duplicate: count('duplicate'),
      stillFailing: count('still_failing'),
      results,
    };
  },
};
