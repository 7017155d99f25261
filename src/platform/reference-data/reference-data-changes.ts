import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../../clock.js';
import type { EmitEvent, Outbox } from '../../events/outbox/outbox.js';
import { ApiError, notFound } from '../../http/api-error.js';
import type { PlatformEvents, ReferenceEntity } from '../events/platform-events.js';
import { fieldsOf, rangeProblems, type ReferenceEntry } from './entities.js';
import {
  countChildSubjects,
  insertEntry,
  lockEntry,
  markEntryDeleted,
  toEntry,
  updateEntry,
  type ReferenceColumns,
  type ReferenceRow,
} from './reference-data-repository.js';
import { assertParentAssignable, lockSubjectHierarchy } from './subject-hierarchy.js';
import { countUsages } from './usage-registry.js';

export interface ReferenceDataChangeDeps {
  outbox: Outbox<PlatformEvents>;
  clock: Clock;
  /** Called after a change of the entity committed (this node drops its cached lists at once). */
  afterChange: (entity: ReferenceEntity) => void;
}

export type DeleteOutcome =
  | { entity: ReferenceEntity; key: string; result: 'deleted' }
  | {
      entity: ReferenceEntity;
      key: string;
      result: 'deactivated';
      is_active: false;
      in_use: { child_subjects: number; usages: number };
    };

const changed = 'platform.reference_data.changed';
const orderingKey = (entity: ReferenceEntity, key: string) => `${entity}:${key}`;

/**
 * Creates an entry and its `created` event in one transaction. A key that exists, or existed and was
 * deleted (its tombstone remains), is refused with 409: keys are never re-purposed.
 */
export async function createEntry(
  deps: ReferenceDataChangeDeps,
  entity: ReferenceEntity,
  input: Record<string, unknown>,
): Promise<ReferenceEntry> {
  const key = input.key as string;
  const entry = await deps.outbox.transaction(async (trx, emit) => {
    const parentKey = input.parent_key as string | null | undefined;
    if (entity === 'subject' && parentKey) await assertParentAssignable(trx, key, parentKey);
    const row = await insertEntry(trx, entity, key, columnsOf(entity, input), deps.clock.now());
    if (!row) {
      // The key is taken: tell a live key from a retired one (both are 409, keys are never reused).
      const existing = await lockEntry(trx, entity, key, 'share');
      throw existing?.deleted_at
        ? new ApiError(409, 'key_retired', `The ${entity} key ${key} was deleted and can't be used again.`)
        : new ApiError(409, 'key_exists', `A ${entity} with the key ${key} already exists.`);
    }
    await announce(emit, entity, key, 'created');
    return toEntry(row);
  });
  deps.afterChange(entity);
  return entry;
}

/**
 * Changes an entry (never its key). No event when nothing changed; `deactivated` when is_active went
 * from true to false, else `updated`.
 */
export async function changeEntry(
  deps: ReferenceDataChangeDeps,
  entity: ReferenceEntity,
  key: string,
  patch: Record<string, unknown>,
): Promise<ReferenceEntry> {
  if (patch.key !== undefined && patch.key !== key) {
    throw new ApiError(
      400,
      'key_immutable',
      'A key never changes: create a new entry with the new key (and deactivate this one).',
      { path: 'key' },
    );
  }
  let anyChange = false;
  const entry = await deps.outbox.transaction(async (trx, emit) => {
    if (entity === 'subject' && typeof patch.parent_key === 'string') await lockSubjectHierarchy(trx);
    const row = await lockEntry(trx, entity, key, 'update');
    if (!row || row.deleted_at) throw notFound(`There is no ${entity} with the key ${key}.`);
    const columns = columnsOf(entity, patch);
    const differences = Object.fromEntries(
      Object.entries(columns).filter(
        ([column, value]) => !isDeepStrictEqual(value, row[column as keyof ReferenceRow]),
      ),
    ) as ReferenceColumns;
    if (Object.keys(differences).length === 0) return toEntry(row);

    const problems = rangeProblems({ ...row, ...differences });
    if (problems.length > 0) {
      throw new ApiError(400, 'invalid_request', 'The range would be empty (min above max).', problems);
    }
    if (entity === 'subject' && typeof differences.parent_key === 'string') {
      await assertParentAssignable(trx, key, differences.parent_key);
    }
    const updated = await updateEntry(trx, entity, key, differences, deps.clock.now());
    const deactivated = row.is_active && differences.is_active === false;
    await announce(emit, entity, key, deactivated ? 'deactivated' : 'updated');
    anyChange = true;
    return toEntry(updated);
  });
  if (anyChange) deps.afterChange(entity);
  return entry;
}

/**
 * Deletes an unused entry (its tombstone keeps the key retired). An entry in use (a live child subject,
 * or a usage recorded by a domain service) is deactivated instead. Either way subscribers hear
 * `deactivated`: the key is no longer assignable.
 */
export async function deleteEntry(
  deps: ReferenceDataChangeDeps,
  entity: ReferenceEntity,
  key: string,
): Promise<DeleteOutcome> {
  let anyChange = false;
  const outcome = await deps.outbox.transaction(async (trx, emit): Promise<DeleteOutcome> => {
    const row = await lockEntry(trx, entity, key, 'update');
    if (!row || row.deleted_at) throw notFound(`There is no ${entity} with the key ${key}.`);
    const childSubjects = entity === 'subject' ? await countChildSubjects(trx, key) : 0;
    const usages = await countUsages(trx, entity, key);
    const now = deps.clock.now();
    if (childSubjects + usages > 0) {
      if (row.is_active) {
        await updateEntry(trx, entity, key, { is_active: false }, now);
        await announce(emit, entity, key, 'deactivated');
        anyChange = true;
      }
      return {
        entity,
        key,
        result: 'deactivated',
        is_active: false,
        in_use: { child_subjects: childSubjects, usages },
      };
    }
    await markEntryDeleted(trx, entity, key, now);
    await announce(emit, entity, key, 'deactivated');
    anyChange = true;
    return { entity, key, result: 'deleted' };
  });
  if (anyChange) deps.afterChange(entity);
  return outcome;
}

async function announce(
  emit: EmitEvent<PlatformEvents>,
  entity: ReferenceEntity,
  key: string,
  action: 'created' | 'updated' | 'deactivated',
): Promise<void> {
  await emit(changed, { entity, key, action }, orderingKey(entity, key));
}

/** The given fields that the entity has (the parsed body may carry defaults or `key`). */
function columnsOf(entity: ReferenceEntity, input: Record<string, unknown>): ReferenceColumns {
  const columns: Record<string, unknown> = {};
  for (const field of fieldsOf(entity)) {
    if (field !== 'key' && input[field] !== undefined) columns[field] = input[field];
  }
  return columns as ReferenceColumns;
}
