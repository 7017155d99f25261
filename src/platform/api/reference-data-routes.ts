import type { Context } from 'koa';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { RecentAnswers } from '../../http/recent-answers.js';
import type { DocumentedRouter } from '../../http/documented-router.js';
import { principalOf } from '../../http/bearer-auth.js';
import { entityDefinitions, type EntityDefinition } from '../reference-data/entities.js';
import type { ReferenceDataCache } from '../reference-data/reference-data-cache.js';
import {
  changeEntry,
  createEntry,
  deleteEntry,
  type ReferenceDataChangeDeps,
} from '../reference-data/reference-data-changes.js';
import { gradeRangeKeySchema, snakeCaseKeySchema } from '../reference-data/reference-key.js';
import { recordUsage, releaseUsage, usedBySchema } from '../reference-data/usage-registry.js';
import type { PlatformAccess } from './platform-access.js';

export interface ReferenceDataRoutesDeps {
  db: Database;
  clock: Clock;
  cache: ReferenceDataCache;
  changes: ReferenceDataChangeDeps;
  access: PlatformAccess;
}

const managePermission = 'platform.reference-data.manage';
const readPermission = 'platform.reference-data.read';
const usagePermission = 'platform.reference-data.usage.write';

const booleanQuery = z.enum(['true', 'false']).transform((value) => value === 'true');

const deleteOutcomeSchema = z
  .object({
    entity: z.string(),
    key: z.string(),
    result: z.enum(['deleted', 'deactivated']).describe('deactivated: the key is in use and was kept'),
    is_active: z.literal(false).optional(),
    in_use: z
      .object({ child_subjects: z.number().int(), usages: z.number().int() })
      .optional()
      .describe('Why the key could not be deleted'),
  })
  .meta({ id: 'ReferenceDeleteOutcome' });

const usageSchema = z
  .object({
    entity: z.string(),
    key: z.string(),
    service: z.string().describe('client_id of the service that recorded the usage'),
    used_by: z.string(),
    created: z.boolean().optional(),
    released: z.boolean().optional(),
  })
  .meta({ id: 'ReferenceUsage' });

/** Accept-Encoding values seen lately and whether each prefers gzip (one per kind of client). */
const gzipPreferred = new RecentAnswers<boolean>(64);

/**
 * Whether the request's Accept-Encoding prefers gzip to the uncompressed list, as Koa's negotiation
 * tells it (q-values, `*`, `identity;q=0`). Remembered per header value: clients repeat theirs, and the
 * negotiation parses it on every request otherwise.
 */
function prefersGzip(ctx: Context): boolean {
  return gzipPreferred.get(
    ctx.get('accept-encoding'),
    () => ctx.acceptsEncodings('gzip', 'identity') === 'gzip',
  );
}

/** /reference/<entity>: the lists (cached, ETag), create, change, delete, and the usage registry. */
export function referenceDataRoutes(deps: ReferenceDataRoutesDeps) {
  return (api: DocumentedRouter): void => {
    for (const definition of entityDefinitions) addEntityRoutes(api, definition, deps);

    // Any other /reference/<segment>: a JSON 404 that names the entities there are.
    const segments = entityDefinitions.map((definition) => definition.segment).join(', ');
    api.router.all(['/reference/:segment', '/reference/:segment/{*rest}'], (ctx) => {
      if (entityDefinitions.some((definition) => definition.segment === ctx.params.segment)) {
        throw ctx.params.rest === undefined
          ? new ApiError(405, 'method_not_allowed', `${ctx.method} is not supported here.`)
          : new ApiError(404, 'not_found', 'There is no such endpoint.');
      }
      throw new ApiError(
        404,
        'unknown_entity',
        `There is no reference entity "${ctx.params.segment}". Use one of: ${segments}.`,
        { entities: entityDefinitions.map((definition) => definition.segment) },
      );
    });
  };
}

function addEntityRoutes(api: DocumentedRouter, definition: EntityDefinition, deps: ReferenceDataRoutesDeps) {
  const { entity, segment } = definition;
  const base = `/reference/${segment}`;
  const tags = ['Reference data'];
  const listQuery = z.strictObject({
    is_active: booleanQuery.optional(),
    ...(entity === 'subject' ? { parent_key: snakeCaseKeySchema.optional() } : {}),
  });
  const keyParam = (ctx: Context): string => {
    // A key no entry can have (creation checks the same form) is not looked up.
    const parsed = (entity === 'grade_range' ? gradeRangeKeySchema : snakeCaseKeySchema).safeParse(
      ctx.params.key,
    );
    if (!parsed.success) throw new ApiError(404, 'not_found', `There is no ${entity} with that key.`);
    return parsed.data;
  };

  api.add(
    {
      method: 'get',
      path: base,
      summary: `List ${segment}${entity === 'subject' ? ' (filters: is_active, parent_key)' : ' (filter: is_active)'}, ordered by display_order`,
      tags,
      security: 'bearer',
      responses: {
        200: { description: 'The entries', schema: z.object({ items: z.array(definition.entry) }) },
        304: { description: 'Not modified since the ETag given in If-None-Match' },
        400: { description: 'Unknown or invalid filter' },
        401: { description: 'No valid access token' },
        403: { description: `A service token without service:${readPermission}` },
      },
    },
    ...deps.access.read(readPermission),
    async (ctx) => {
      const query = listQuery.parse(ctx.query) as { is_active?: boolean; parent_key?: string };
      const fresh = /\bno-cache\b/.test(ctx.get('cache-control'));
      const list = await deps.cache.list(
        entity,
        { isActive: query.is_active, parentKey: query.parent_key },
        fresh,
      );
      ctx.set('ETag', list.etag);
      ctx.set('Cache-Control', 'private, no-cache');
      ctx.set('Vary', 'Accept-Encoding, Authorization');
      if (etagMatches(ctx.get('if-none-match'), list.etag)) {
        ctx.status = 304;
        return;
      }
      ctx.type = 'application/json; charset=utf-8';
      if (prefersGzip(ctx)) {
        ctx.set('Content-Encoding', 'gzip');
        ctx.body = list.gzipped;
      } else {
        ctx.body = list.body;
      }
    },
  );

  api.add(
    {
      method: 'post',
      path: base,
      summary: `Create a ${entity}`,
      tags,
      security: 'bearer',
      body: definition.create,
      responses: {
        201: {
          description: 'Created; platform.reference_data.changed (created) is published',
          schema: definition.entry,
        },
        400: { description: 'Invalid body (key format, missing title, locale codes, parent, range)' },
        401: { description: 'No valid access token' },
        403: { description: `Not a user with ${managePermission}` },
        409: { description: 'key_exists, or key_retired: the key was deleted and is never reused' },
      },
    },
    ...deps.access.manage(managePermission),
    async (ctx, body) => {
      ctx.status = 201;
      ctx.body = await createEntry(deps.changes, entity, body);
    },
  );

  api.add(
    {
      method: 'patch',
      path: `${base}/:key`,
      summary: `Change a ${entity} (never its key)`,
      tags,
      security: 'bearer',
      body: definition.patch,
      responses: {
        200: {
          description: 'The entry; an event is published when something changed',
          schema: definition.entry,
        },
        400: { description: 'Invalid body, or key_immutable' },
        401: { description: 'No valid access token' },
        403: { description: `Not a user with ${managePermission}` },
        404: { description: 'No such key' },
      },
    },
    ...deps.access.manage(managePermission),
    async (ctx, body) => {
      ctx.body = await changeEntry(deps.changes, entity, keyParam(ctx), body);
    },
  );

  api.add(
    {
      method: 'delete',
      path: `${base}/:key`,
      summary: `Delete an unused ${entity}; one in use is deactivated instead`,
      tags,
      security: 'bearer',
      responses: {
        200: { description: 'What happened: deleted, or deactivated (in use)', schema: deleteOutcomeSchema },
        401: { description: 'No valid access token' },
        403: { description: `Not a user with ${managePermission}` },
        404: { description: 'No such key' },
      },
    },
    ...deps.access.manage(managePermission),
    async (ctx) => {
      ctx.body = await deleteEntry(deps.changes, entity, keyParam(ctx));
    },
  );

  api.add(
    {
      method: 'put',
      path: `${base}/:key/usages/:usedBy`,
      summary: `Record that an entity of the calling service (usedBy, e.g. course:42) uses this ${entity}`,
      tags: ['Reference data usage'],
      security: 'bearer',
      responses: {
        201: { description: 'Recorded', schema: usageSchema },
        200: { description: 'Was already recorded', schema: usageSchema },
        401: { description: 'No valid access token' },
        403: { description: `Not a service token with service:${usagePermission}` },
        404: { description: 'No such key' },
        409: { description: 'key_inactive: nothing new may be assigned to a deactivated key' },
      },
    },
    ...deps.access.service(usagePermission),
    async (ctx) => {
      const usage = usageOf(ctx, entity, keyParam(ctx));
      const { created } = await recordUsage(deps.db, usage, deps.clock.now());
      ctx.status = created ? 201 : 200;
      ctx.body = { entity, key: usage.key, service: usage.service, used_by: usage.usedBy, created };
    },
  );

  api.add(
    {
      method: 'delete',
      path: `${base}/:key/usages/:usedBy`,
      summary: `Release a usage of this ${entity} recorded by the calling service`,
      tags: ['Reference data usage'],
      security: 'bearer',
      responses: {
        200: { description: 'released: whether there was such a usage', schema: usageSchema },
        401: { description: 'No valid access token' },
        403: { description: `Not a service token with service:${usagePermission}` },
      },
    },
    ...deps.access.service(usagePermission),
    async (ctx) => {
      const usage = usageOf(ctx, entity, keyParam(ctx));
      const { released } = await releaseUsage(deps.db, usage);
      ctx.body = { entity, key: usage.key, service: usage.service, used_by: usage.usedBy, released };
    },
  );
}

function usageOf(ctx: Context, entity: EntityDefinition['entity'], key: string) {
  const principal = principalOf(ctx);
  if (principal.kind !== 'service') throw new Error('usage routes are for service tokens');
  const usedBy = usedBySchema.safeParse(ctx.params.usedBy);
  if (!usedBy.success) {
    throw new ApiError(400, 'invalid_request', 'usedBy is not valid.', [
      { path: 'usedBy', message: usedBy.error.issues[0]!.message },
    ]);
  }
  return { entity, key, service: principal.clientId, usedBy: usedBy.data };
}

/** If-None-Match (weak comparison, RFC 9110 §13.1.2): any listed tag, or *. */
function etagMatches(header: string, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const opaque = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === opaque);
}
