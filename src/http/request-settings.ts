import type { Middleware } from 'koa';
import { resolveSettings, type ServiceSettings } from '../defaults.js';
import { currentRequest } from './request-context.js';

const defaultSettings = resolveSettings();

/**
 * Gives each request its service's settings (`createIdentityService({ settings })`), so the rules
 * applied deep inside a request (the lockout ladder, one-time codes, cookie names) are that service's,
 * as the request id is: two services in one process never see each other's. They live in the
 * request's context (request-context.ts), which must be set up first.
 */
export function withServiceSettings(settings: ServiceSettings): Middleware {
  return (_ctx, next) => {
    const request = currentRequest();
    if (!request) throw new Error('withServiceSettings must run inside requestContext');
    request.settings = settings;
    return next();
  };
}

/** The settings of the service serving the current request; outside a request, the defaults. */
export function currentSettings(): ServiceSettings {
  return currentRequest()?.settings ?? defaultSettings;
}
