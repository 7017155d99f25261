// Configuration for the knex CLI (e.g. `npx knex migrate:status`); the service migrates itself at start.
import { loadConfig } from './src/config.js';
import { migrationConfig } from './src/db/migrate.js';

const config = loadConfig();

if (!config.databaseUrl) {
  throw new Error('The knex CLI needs DATABASE_URL; for the embedded database use `npm run idp -- migrate`.');
}

export default {
  client: 'pg',
  connection: config.databaseUrl,
  migrations: migrationConfig,
};
