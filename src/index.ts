export { createIdentityService, type IdentityService, type IdentityServiceOptions } from './service.js';
export { loadConfig, ConfigError, type Config } from './config.js';
export { openDatabase, type DatabaseHandle } from './db/database.js';
export { migrateToLatest } from './db/migrate.js';
