import { migrateToLatest } from '../../db/migrate.js';
import type { CliCommand } from '../command.js';

export const migrateCommand: CliCommand = {
  name: 'migrate',
  usage: 'migrate',
  summary: 'Bring the database schema to the latest version',
  options: {},
  needsDatabase: true,
  async run(_values, context) {
    return { applied: await migrateToLatest(context!.db) };
  },
};
