import { z } from 'zod';
import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';

/** A translation package as listed (the messages only when one package is fetched). */
export const i18nPackageSchema = z
  .object({
    locale: z.string(),
    namespace: z.string().nullable(),
    version: z.string(),
    status: z.enum(['published', 'revoked']),
    published_at: z.string(),
    revoked_at: z.string().nullable(),
    messages: z.record(z.string(), z.string()).optional(),
  })
  .meta({ id: 'I18nPackage' });

export type I18nPackage = z.infer<typeof i18nPackageSchema>;

export interface PackageId {
  locale: string;
  namespace: string | null;
  version: string;
}

interface PackageRow {
  locale: string;
  namespace: string | null;
  version: string;
  status: 'published' | 'revoked';
  published_at: Date;
  revoked_at: Date | null;
  messages?: Record<string, string>;
}

const table = 'platform_i18n_packages';
const listed = ['locale', 'namespace', 'version', 'status', 'published_at', 'revoked_at'];

function fromRow(row: PackageRow): I18nPackage {
  return {
    locale: row.locale,
    namespace: row.namespace,
    version: row.version,
    status: row.status,
    published_at: row.published_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
    ...(row.messages ? { messages: row.messages } : {}),
  };
}

/** Packages, newest first; filtered by locale and namespace when given. */
export async function listPackages(
  db: Queryable,
  filter: { locale?: string | undefined; namespace?: string | undefined },
): Promise<I18nPackage[]> {
  const query = db(table)
    .orderBy([{ column: 'published_at', order: 'desc' }, 'id'])
    .select(listed);
  if (filter.locale !== undefined) query.where({ locale: filter.locale });
  if (filter.namespace !== undefined) query.where({ namespace: filter.namespace });
  return ((await query) as PackageRow[]).map(fromRow);
}

function whereId(query: Knex.QueryBuilder, id: PackageId): Knex.QueryBuilder {
  query.where({ locale: id.locale, version: id.version });
  return id.namespace === null ? query.whereNull('namespace') : query.where({ namespace: id.namespace });
}

export async function findPackage(db: Queryable, id: PackageId): Promise<I18nPackage | undefined> {
  const row = (await whereId(db(table), id).first([...listed, 'messages'])) as PackageRow | undefined;
  return row ? fromRow(row) : undefined;
}

export async function lockPackage(trx: Queryable, id: PackageId): Promise<I18nPackage | undefined> {
  const row = (await whereId(trx(table), id).forUpdate().first(listed)) as PackageRow | undefined;
  return row ? fromRow(row) : undefined;
}

/** Inserts unless that version exists (undefined then: versions are never reused). */
export async function insertPackage(
  trx: Queryable,
  id: PackageId,
  messages: Record<string, string>,
  now: Date,
): Promise<I18nPackage | undefined> {
  const [row] = await trx(table)
    .insert({ ...id, messages: JSON.stringify(messages), status: 'published', published_at: now })
    .onConflict()
    .ignore()
    .returning(listed);
  return row ? fromRow(row as PackageRow) : undefined;
}

export async function markPackageRevoked(trx: Queryable, id: PackageId, now: Date): Promise<I18nPackage> {
  const [row] = await whereId(trx(table), id)
    .update({ status: 'revoked', revoked_at: now })
    .returning(listed);
  return fromRow(row as PackageRow);
}
