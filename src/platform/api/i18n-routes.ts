import { z } from 'zod';
import type { Database } from '../../db/database.js';
import { notFound } from '../../http/api-error.js';
import type { DocumentedRouter } from '../../http/documented-router.js';
import {
  i18nNamespaceSchema,
  newPackageSchema,
  packageIdSchema,
  publishPackage,
  revokePackage,
  type I18nDeps,
} from '../i18n/i18n-package-changes.js';
import { findPackage, i18nPackageSchema, listPackages } from '../i18n/i18n-package-store.js';
import { localeCodeSchema } from '../reference-data/localized-text.js';
import type { PlatformAccess } from './platform-access.js';

const managePermission = 'platform.i18n.manage';
const readPermission = 'platform.i18n.read';

/** /i18n/packages: the minimal admin API behind platform.i18n.changed. */
export function i18nRoutes(deps: I18nDeps & { db: Database; access: PlatformAccess }) {
  const tags = ['Translations'];
  const errors = {
    401: { description: 'No valid access token' },
    403: { description: `Not a user with ${managePermission}` },
  };
  return (api: DocumentedRouter): void => {
    api.add(
      {
        method: 'get',
        path: '/i18n/packages',
        summary: 'List translation packages, newest first (filters: locale, namespace)',
        tags,
        security: 'bearer',
        query: z.strictObject({
          locale: localeCodeSchema.optional(),
          namespace: i18nNamespaceSchema.optional(),
        }),
        responses: {
          200: {
            description: 'The packages (without messages)',
            schema: z.object({ items: z.array(i18nPackageSchema) }),
          },
          400: { description: 'Invalid filter' },
          401: errors[401],
          403: { description: `A service token without service:${readPermission}` },
        },
      },
      ...deps.access.read(readPermission),
      async (ctx, _body, { query }) => {
        ctx.body = { items: await listPackages(deps.db, query) };
      },
    );
    api.add(
      {
        method: 'get',
        path: '/i18n/packages/:locale/:version',
        summary: 'One package version with its messages (query: namespace)',
        tags,
        security: 'bearer',
        responses: {
          200: { description: 'The package', schema: i18nPackageSchema },
          401: errors[401],
          403: { description: `A service token without service:${readPermission}` },
          404: { description: 'No such package version' },
        },
      },
      ...deps.access.read(readPermission),
      async (ctx) => {
        const id = packageIdSchema.safeParse({
          ...ctx.query,
          locale: ctx.params.locale,
          version: ctx.params.version,
        });
        const found = id.success ? await findPackage(deps.db, id.data) : undefined;
        if (!found) throw notFound('There is no such translation package version.');
        ctx.body = found;
      },
    );
    api.add(
      {
        method: 'post',
        path: '/i18n/packages',
        summary: 'Publish a translation package version (publishes platform.i18n.changed published)',
        tags,
        security: 'bearer',
        body: newPackageSchema,
        responses: {
          201: { description: 'Published', schema: i18nPackageSchema },
          400: { description: 'Invalid body' },
          ...errors,
          409: { description: 'version_exists: versions are never published twice' },
        },
      },
      ...deps.access.manage(managePermission),
      async (ctx, body) => {
        ctx.status = 201;
        ctx.body = await publishPackage(deps, body);
      },
    );
    api.add(
      {
        method: 'post',
        path: '/i18n/packages/revoke',
        summary: 'Revoke a package version (publishes revoked; nothing when already revoked)',
        tags,
        security: 'bearer',
        body: packageIdSchema,
        responses: {
          200: { description: 'The package', schema: i18nPackageSchema },
          400: { description: 'Invalid body' },
          ...errors,
          404: { description: 'No such package version' },
        },
      },
      ...deps.access.manage(managePermission),
      async (ctx, body) => {
        ctx.body = await revokePackage(deps, body);
      },
    );
  };
}
