import { z } from 'zod';
import type { Queryable } from '../../db/database.js';

/** A platform feature flag (table platform_feature_flags). */
export const featureFlagSchema = z
  .object({
    key: z.string(),
    service: z.string().nullable().describe('The service the flag belongs to; null = ecosystem-wide'),
    description: z.string(),
    enabled: z.boolean(),
    version: z.number().int().describe('Grows by one at every change'),
    updated_at: z.string(),
  })
  .meta({ id: 'FeatureFlag' });

export type FeatureFlag = z.infer<typeof featureFlagSchema>;

interface FeatureFlagRow {
  key: string;
  service: string | null;
  description: string;
  enabled: boolean;
  version: number;
  updated_at: Date;
}

const table = 'platform_feature_flags';

function fromRow(row: FeatureFlagRow): FeatureFlag {
  return {
    key: row.key,
    service: row.service,
    description: row.description,
    enabled: row.enabled,
    version: row.version,
    updated_at: row.updated_at.toISOString(),
  };
}

export async function listFeatureFlags(db: Queryable, service?: string): Promise<FeatureFlag[]> {
  const query = db<FeatureFlagRow>(table).orderBy('key', 'asc').select('*');
  if (service !== undefined) query.where({ service });
  return (await query).map(fromRow);
}

export async function lockFeatureFlag(trx: Queryable, key: string): Promise<FeatureFlag | undefined> {
  const row = await trx<FeatureFlagRow>(table).where({ key }).forUpdate().first('*');
  return row ? fromRow(row) : undefined;
}

/** Inserts at version 1 unless the key is taken (undefined then). */
export async function insertFeatureFlag(
  trx: Queryable,
  flag: { key: string; service: string | null; description: string; enabled: boolean },
  now: Date,
): Promise<FeatureFlag | undefined> {
  const [row] = await trx(table)
    .insert({ ...flag, version: 1, created_at: now, updated_at: now })
    .onConflict('key')
    .ignore()
    .returning('*');
  return row ? fromRow(row as FeatureFlagRow) : undefined;
}

/** Applies a change and moves the version on by one. */
export async function updateFeatureFlag(
  trx: Queryable,
  key: string,
  change: { description?: string; enabled?: boolean },
  now: Date,
): Promise<FeatureFlag> {
  const [row] = await trx(table)
    .where({ key })
    .update({ ...change, version: trx.raw('version + 1'), updated_at: now })
    .returning('*');
  return fromRow(row as FeatureFlagRow);
}
