import type { Knex } from 'knex';
import { ApiError } from '../../http/api-error.js';
import { ancestorKeys, lockEntry } from './reference-data-repository.js';

// Hierarchy changes take this transaction-scoped lock: two concurrent re-parentings (a under b, b under
// a) each look cycle-free on their own; serialised, the second one sees the first.
const hierarchyLockKey = 7_403_101;

/**
 * Serialises hierarchy changes until the transaction ends. Take it before locking any subject row:
 * taken after, two re-parentings (each holding its own row, waiting for the lock and the other's row)
 * would deadlock.
 */
export async function lockSubjectHierarchy(trx: Knex.Transaction): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(?)', [hierarchyLockKey]);
}

/**
 * Checks that `parentKey` may become the parent of subject `key`: it exists, is not deleted, is active
 * (nothing new is assigned to an inactive key) and is not `key` itself or one of its descendants. The
 * parent's row stays share-locked until commit, so it can't be deleted meanwhile. Takes the hierarchy
 * lock (a no-op when the caller already holds it).
 */
export async function assertParentAssignable(
  trx: Knex.Transaction,
  key: string,
  parentKey: string,
): Promise<void> {
  await lockSubjectHierarchy(trx);
  const parent = await lockEntry(trx, 'subject', parentKey, 'share');
  if (!parent || parent.deleted_at) {
    throw new ApiError(400, 'invalid_parent', `There is no subject with the key ${parentKey}.`, {
      path: 'parent_key',
    });
  }
  if (!parent.is_active) {
    throw new ApiError(400, 'invalid_parent', `The subject ${parentKey} is deactivated.`, {
      path: 'parent_key',
    });
  }
  const chain = await ancestorKeys(trx, parentKey);
  if (chain.includes(key)) {
    throw new ApiError(
      400,
      'cyclic_parent',
      `The subject ${parentKey} is ${parentKey === key ? 'the subject itself' : `below ${key}`}: a subject can't be its own ancestor.`,
      { path: 'parent_key', chain: [key, ...chain.slice(0, chain.indexOf(key) + 1)] },
    );
  }
}
