import { z } from 'zod';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import type { DocumentedRouter } from '../../http/documented-router.js';
import {
  changeFeatureFlag,
  createFeatureFlag,
  featureFlagChangeSchema,
  featureFlagKeySchema,
  newFeatureFlagSchema,
  type FeatureFlagDeps,
} from '../feature-flags/feature-flag-changes.js';
import { featureFlagSchema, listFeatureFlags } from '../feature-flags/feature-flag-store.js';
import type { PlatformAccess } from './platform-access.js';

const managePermission = 'platform.feature-flags.manage';
const readPermission = 'platform.feature-flags.read';

/** /feature-flags: the minimal admin API behind platform.feature_flag.changed. */
export function featureFlagRoutes(deps: FeatureFlagDeps & { db: Database; access: PlatformAccess }) {
  const tags = ['Feature flags'];
  const keyOf = (value: string | undefined) => {
    const parsed = featureFlagKeySchema.safeParse(value);
    if (!parsed.success) throw new ApiError(404, 'not_found', 'There is no such feature flag.');
    return parsed.data;
  };
  const errors = {
    401: { description: 'No valid access token' },
    403: { description: `Not a user with ${managePermission}` },
  };
  return (api: DocumentedRouter): void => {
    api.add(
      {
        method: 'get',
        path: '/feature-flags',
        summary: 'List feature flags (filter: service)',
        tags,
        security: 'bearer',
        query: z.strictObject({
          service: z.string().max(100).optional().describe('Only this service’s flags'),
        }),
        responses: {
          200: { description: 'The flags', schema: z.object({ items: z.array(featureFlagSchema) }) },
          401: errors[401],
          403: { description: `A service token without service:${readPermission}` },
        },
      },
      ...deps.access.read(readPermission),
      async (ctx, _body, { query }) => {
        ctx.body = { items: await listFeatureFlags(deps.db, query.service) };
      },
    );
    api.add(
      {
        method: 'post',
        path: '/feature-flags',
        summary: 'Create a feature flag (version 1; publishes created)',
        tags,
        security: 'bearer',
        body: newFeatureFlagSchema,
        responses: {
          201: { description: 'Created', schema: featureFlagSchema },
          400: { description: 'Invalid body' },
          ...errors,
          409: { description: 'A flag with this key exists' },
        },
      },
      ...deps.access.manage(managePermission),
      async (ctx, body) => {
        ctx.status = 201;
        ctx.body = await createFeatureFlag(deps, body);
      },
    );
    api.add(
      {
        method: 'patch',
        path: '/feature-flags/:key',
        summary: 'Change a feature flag (version + 1; publishes updated, or disabled when turned off)',
        tags,
        security: 'bearer',
        body: featureFlagChangeSchema,
        responses: {
          200: { description: 'The flag', schema: featureFlagSchema },
          400: { description: 'Invalid body' },
          ...errors,
          404: { description: 'No such flag' },
        },
      },
      ...deps.access.manage(managePermission),
      async (ctx, body) => {
        ctx.body = await changeFeatureFlag(deps, keyOf(ctx.params.key), body);
      },
    );
    api.add(
      {
        method: 'post',
        path: '/feature-flags/:key/disable',
        summary: 'Disable a feature flag (publishes disabled; nothing when already disabled)',
        tags,
        security: 'bearer',
        responses: {
          200: { description: 'The flag', schema: featureFlagSchema },
          ...errors,
          404: { description: 'No such flag' },
        },
      },
      ...deps.access.manage(managePermission),
      async (ctx) => {
        ctx.body = await changeFeatureFlag(deps, keyOf(ctx.params.key), { enabled: false });
      },
    );
  };
}
