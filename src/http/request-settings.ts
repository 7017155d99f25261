import { AsyncLocalStorage } from 'node:async_hooks';
import type { Middleware } from 'koa';
import { resolveSettings, type ServiceSettings } from '../defaults.js';

const storage = new AsyncLocalStorage<ServiceSettings>();
const defaultSettings = resolveSettings();

/**
 * Runs each request with its service's settings (`createIdentityService({ settings })`), so the rules
 * applied deep inside a request (the lockout ladder, one-time codes, cookie names) are that service's,
 * as the request id is (request-context.ts): two services in one process never see each other's.
 */
export function withServiceSettings(settings: ServiceSettings): Middleware {
  return (_ctx, next) => storage.run(settings, next);
}

/** The settings of the service serving the current request; outside a request, the defaults. */
export function currentSettings(): ServiceSettings {
  return storage.getStore() ?? defaultSettings;
}
