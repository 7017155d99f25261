import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Outbox } from '../../events/outbox/outbox.js';
import { ApiError, notFound } from '../../http/api-error.js';
import type { PlatformEvents } from '../events/platform-events.js';
import { localeCodeSchema } from '../reference-data/localized-text.js';
import {
  insertPackage,
  lockPackage,
  markPackageRevoked,
  type I18nPackage,
  type PackageId,
} from './i18n-package-store.js';

export const i18nNamespaceSchema = z
  .string()
  .max(100)
  .regex(/^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/, 'must be lower-case segments joined by dots');

export const packageIdSchema = z.strictObject({
  locale: localeCodeSchema,
  namespace: i18nNamespaceSchema.nullable().default(null),
  version: z
    .string()
    .min(1)
    .max(50)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]*$/, 'must be a version string such as 1.4.0 or 2026-11-23.1'),
});

export const newPackageSchema = packageIdSchema.extend({
  messages: z
    .record(z.string().min(1).max(200), z.string().max(10_000))
    .refine((messages) => Object.keys(messages).length > 0, { message: 'needs at least one message' }),
});

export interface I18nDeps {
  outbox: Outbox<PlatformEvents>;
  clock: Clock;
}

const changed = 'platform.i18n.changed';

function eventData(id: PackageId, action: 'published' | 'revoked') {
  return {
    locale: id.locale,
    ...(id.namespace === null ? {} : { namespace: id.namespace }),
    action,
    version: id.version,
  };
}

const orderingKey = (id: PackageId) => `i18n:${id.locale}:${id.namespace ?? ''}`;

/** Publishes a package version; a version that exists (even revoked) is never published again. */
export async function publishPackage(
  deps: I18nDeps,
  input: z.output<typeof newPackageSchema>,
): Promise<I18nPackage> {
  const { messages, ...id } = input;
  return deps.outbox.transaction(async (trx, emit) => {
    const published = await insertPackage(trx, id, messages, deps.clock.now());
    if (!published) {
      throw new ApiError(
        409,
        'version_exists',
        `Version ${id.version} of ${id.locale}${id.namespace ? `/${id.namespace}` : ''} exists: publish a new version.`,
      );
    }
    await emit(changed, eventData(id, 'published'), orderingKey(id));
    return published;
  });
}

/** Revokes a published version; revoking it again changes nothing and publishes nothing. */
export async function revokePackage(deps: I18nDeps, id: PackageId): Promise<I18nPackage> {
  return deps.outbox.transaction(async (trx, emit) => {
    const existing = await lockPackage(trx, id);
    if (!existing) throw notFound(`There is no version ${id.version} of ${id.locale}.`);
    if (existing.status === 'revoked') return existing;
    const revoked = await markPackageRevoked(trx, id, deps.clock.now());
    await emit(changed, eventData(id, 'revoked'), orderingKey(id));
    return revoked;
  });
}
