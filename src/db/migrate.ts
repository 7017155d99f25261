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

export const migrationConfig: Knex.MigratorConfig = {
  migrationSource: new DirectoryMigrationSource(),
  tableName: 'knex_migrations',
};

/** Brings the schema to the latest version; safe when several nodes start at once (knex's lock). */
export async function migrateToLatest(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest(migrationConfig)) as [number, string[]];
  return applied;
}
