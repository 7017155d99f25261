import fs from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import type { Knex } from 'knex';

const migrationsDirectory = fileURLToPath(new URL('../../migrations/', import.meta.url));

interface MigrationModule {
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

/**
 * Loads the files of migrations/ in name order by dynamic import, so the same list runs under tsx,
 * vitest and compiled output.
 */
class DirectoryMigrationSource implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    const files = await fs.readdir(migrationsDirectory);
    return files.filter((file) => /^\d{14}_[a-z0-9_]+\.(ts|js)$/.test(file)).sort();
  }

  getMigrationName(file: string): string {
    return file.replace(/\.(ts|js)$/, '');
  }

  async getMigration(file: string): Promise<MigrationModule> {
    return (await import(pathToFileURL(path.join(migrationsDirectory, file)).href)) as MigrationModule;
  }
}

/**
 * The service's own migrations table (knex's default `knex_migrations` is the host's, when the service
 * shares its database); knex adds `<name>_lock`.
 */
export const migrationsTable = 'identity_service_migrations';
/** Where versions before 0.x kept the list of applied migrations (knex's default). */
const legacyMigrationsTable = 'knex_migrations';
/** The first migration of the service: a `knex_migrations` table listing it is the service's. */
const firstMigration = '20261121000100_identity_foundation';

export const migrationConfig: Knex.MigratorConfig = {
  migrationSource: new DirectoryMigrationSource(),
  tableName: migrationsTable,
};

/**
 * The migrations this version ships that the database hasn't applied, read without writing anything
 * (knex's own `migrate.list` creates its tables when they are missing). Applied migrations this
 * version doesn't know are not counted: a newer version migrated first.
 */
export async function pendingMigrations(db: Knex): Promise<string[]> {
  const source = migrationConfig.migrationSource as DirectoryMigrationSource;
  const shipped = (await source.getMigrations()).map((file) => source.getMigrationName(file));
  let applied: string[] = [];
  if (await db.schema.hasTable(migrationsTable)) {
    applied = await db(migrationsTable).pluck('name');
  } else if (await db.schema.hasTable(legacyMigrationsTable)) {
    const names: string[] = await db(legacyMigrationsTable).pluck('name');
    if (names.includes(firstMigration)) applied = names;
  }
  const done = new Set(applied.map((name) => name.replace(/\.(ts|js)$/, '')));
  return shipped.filter((name) => !done.has(name));
}

/** Brings the schema to the latest version; safe when several nodes start at once (knex's lock). */
export async function migrateToLatest(db: Knex): Promise<string[]> {
  if (await atThisVersion(db)) return [];
  await adoptLegacyMigrationsTable(db);
  const [, applied] = (await db.migrate.latest(migrationConfig)) as [number, string[]];
  return applied;
}

/**
 * Whether the database has applied exactly the migrations this version ships, listed in the service's
 * own table, and no node is migrating: the usual start, which then has nothing to do. Four reads,
 * where knex's run (the tables' checks, taking and freeing its lock, the list) makes a dozen
 * statements: 0.1-0.3 s of CPU on an embedded start on a slow VM. Anything else (a migration pending,
 * the legacy table, one this version doesn't know, which knex refuses) takes knex's path, as before.
 */
async function atThisVersion(db: Knex): Promise<boolean> {
  if (!(await db.schema.hasTable(migrationsTable))) return false;
  const source = migrationConfig.migrationSource as DirectoryMigrationSource;
  const shipped = (await source.getMigrations()).map((file) => source.getMigrationName(file));
  const applied: string[] = await db(migrationsTable).pluck('name');
  // A node migrating now (knex's lock taken): knex's path, which refuses to start beside it, as before.
  const lockTable = `${migrationsTable}_lock`;
  if (!(await db.schema.hasTable(lockTable))) return false;
  if (await db(lockTable).where({ is_locked: 1 }).first()) return false;
  const appliedNames = new Set(applied.map((name) => name.replace(/\.(ts|js)$/, '')));
  return appliedNames.size === shipped.length && shipped.every((name) => appliedNames.has(name));
}

/**
 * A database migrated by a version that used knex's default table: its `knex_migrations` (and lock
 * table, their sequences and keys) are renamed to the service's names, once, so the next migration
 * run sees every migration as applied. A `knex_migrations` that doesn't list the service's first
 * migration is a host's and is left alone.
 */
async function adoptLegacyMigrationsTable(db: Knex): Promise<void> {
  await db.transaction(async (trx) => {
    // Nodes starting at once: one renames, the others find it done.
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [migrationsTable]);
    if (await trx.schema.hasTable(migrationsTable)) return;
    if (!(await trx.schema.hasTable(legacyMigrationsTable))) return;
    const ours = await trx(legacyMigrationsTable).where({ name: firstMigration }).first();
    if (!ours) return;
    for (const [from, to] of [
      [legacyMigrationsTable, migrationsTable],
      [`${legacyMigrationsTable}_lock`, `${migrationsTable}_lock`],
    ] as const) {
      await trx.raw('alter table if exists ?? rename to ??', [from, to]);
      await trx.raw('alter index if exists ?? rename to ??', [`${from}_pkey`, `${to}_pkey`]);
    }
    await trx.raw('alter sequence if exists ?? rename to ??', [
      `${legacyMigrationsTable}_id_seq`,
      `${migrationsTable}_id_seq`,
    ]);
    await trx.raw('alter sequence if exists ?? rename to ??', [
      `${legacyMigrationsTable}_lock_index_seq`,
      `${migrationsTable}_lock_index_seq`,
    ]);
  });
}
