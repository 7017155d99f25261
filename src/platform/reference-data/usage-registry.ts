import { z } from 'zod';
import type { Database, Queryable } from '../../db/database.js';
import { ApiError, notFound } from '../../http/api-error.js';
import type { ReferenceEntity } from '../events/platform-events.js';
import { lockEntry } from './reference-data-repository.js';

/**
 * The usage registry: domain services report which of their entities refer to a reference key
 * ("course:42 of service crm uses subject algebra"). A key with a recorded usage is "in use": DELETE
 * deactivates it instead of deleting it.
 */

/** The domain's own reference to its entity, e.g. "course:42". */
export const usedBySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._:@/-]+$/, 'must be letters, digits and . _ : @ / -');

export interface Usage {
  entity: ReferenceEntity;
  key: string;
  /** The service (its OAuth client_id) that reported the usage. */
  service: string;
  usedBy: string;
}

export async function countUsages(db: Queryable, entity: ReferenceEntity, key: string): Promise<number> {
  const row = await db('reference_data_usages')
    .where({ entity, key })
    .first(db.raw('count(*)::int as count'));
  return (row as { count: number } | undefined)?.count ?? 0;
}

/**
 * Records a usage; answers whether it is new. The key must exist; a new usage needs an active key
 * (is_active: whether new entities may be assigned to it). The entry's row is share-locked, so a
 * concurrent DELETE sees the usage (or the usage sees the deletion).
 */
export async function recordUsage(db: Database, usage: Usage, now: Date): Promise<{ created: boolean }> {
  return db.transaction(async (trx) => {
    const entry = await lockEntry(trx, usage.entity, usage.key, 'share');
    if (!entry || entry.deleted_at) throw notFound(`There is no ${usage.entity} with the key ${usage.key}.`);
    const where = { entity: usage.entity, key: usage.key, client_id: usage.service, used_by: usage.usedBy };
    if (!entry.is_active) {
      if (await trx('reference_data_usages').where(where).first('key')) return { created: false };
      throw new ApiError(
        409,
        'key_inactive',
        `The ${usage.entity} ${usage.key} is deactivated: nothing new may be assigned to it.`,
      );
    }
    const inserted = await trx('reference_data_usages')
      .insert({ ...where, created_at: now })
      .onConflict(['entity', 'key', 'client_id', 'used_by'])
      .ignore()
      .returning('key');
    return { created: inserted.length > 0 };
  });
}

/** Releases a usage of this service; answers whether there was one. */
export async function releaseUsage(db: Queryable, usage: Usage): Promise<{ released: boolean }> {
  const deleted = await db('reference_data_usages')
    .where({ entity: usage.entity, key: usage.key, client_id: usage.service, used_by: usage.usedBy })
    .delete();
  return { released: deleted > 0 };
}
