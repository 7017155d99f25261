import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Outbox } from '../../events/outbox/outbox.js';
import { ApiError, notFound } from '../../http/api-error.js';
import type { PlatformEvents } from '../events/platform-events.js';
import {
  insertFeatureFlag,
  lockFeatureFlag,
  updateFeatureFlag,
  type FeatureFlag,
} from './feature-flag-store.js';

export const featureFlagKeySchema = z
  .string()
  .max(150)
  .regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/, 'must be lower-case snake_case segments joined by dots');

export const newFeatureFlagSchema = z.strictObject({
  key: featureFlagKeySchema,
  service: z
    .string()
    .max(100)
    .regex(/^[a-z][a-z0-9_-]*$/, 'must be a lower-case service name')
    .nullable()
    .default(null),
  description: z.string().max(2000).default(''),
  enabled: z.boolean().default(false),
});

export const featureFlagChangeSchema = z
  .strictObject({ description: z.string().max(2000).optional(), enabled: z.boolean().optional() })
  .refine((change) => change.description !== undefined || change.enabled !== undefined, {
    message: 'give description and/or enabled',
  });

export interface FeatureFlagDeps {
  outbox: Outbox<PlatformEvents>;
  clock: Clock;
}

const changed = 'platform.feature_flag.changed';

/** Creates a flag (version 1) and publishes `created`. */
export async function createFeatureFlag(
  deps: FeatureFlagDeps,
  input: z.output<typeof newFeatureFlagSchema>,
): Promise<FeatureFlag> {
  return deps.outbox.transaction(async (trx, emit) => {
    const flag = await insertFeatureFlag(trx, input, deps.clock.now());
    if (!flag) throw new ApiError(409, 'key_exists', `A feature flag ${input.key} already exists.`);
    await emit(changed, eventData(flag, 'created'), `flag:${flag.key}`);
    return flag;
  });
}

/**
 * Changes a flag: every real change moves the version on and publishes `updated`, or `disabled` when
 * it turned the flag off. A change that changes nothing keeps the version and publishes nothing.
 */
export async function changeFeatureFlag(
  deps: FeatureFlagDeps,
  key: string,
  change: z.output<typeof featureFlagChangeSchema>,
): Promise<FeatureFlag> {
  return deps.outbox.transaction(async (trx, emit) => {
    const flag = await lockFeatureFlag(trx, key);
    if (!flag) throw notFound(`There is no feature flag ${key}.`);
    const differences = Object.fromEntries(
      Object.entries(change).filter(
        ([field, value]) => value !== undefined && flag[field as keyof FeatureFlag] !== value,
      ),
    );
    if (Object.keys(differences).length === 0) return flag;
    const updated = await updateFeatureFlag(trx, key, differences, deps.clock.now());
    const action = flag.enabled && !updated.enabled ? 'disabled' : 'updated';
    await emit(changed, eventData(updated, action), `flag:${key}`);
    return updated;
  });
}

function eventData(flag: FeatureFlag, action: 'created' | 'updated' | 'disabled') {
  return {
    flagKey: flag.key,
    ...(flag.service === null ? {} : { service: flag.service }),
    action,
    version: flag.version,
  };
}
